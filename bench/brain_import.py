"""Coming over from Ombre-Brain at scale: a generated 5,000-memory vault imported, timed, and recalled from.

The vault is written in Ombre-Brain's documented format from MemDaily's messages (every trajectory's messages
until 5,000: dynamic/<topic>/ buckets with frontmatter, half of them with a `_sources` file of the person's
words, a fifth with a time without a zone). `import_vault` reads it into a fresh SQLite store with both
bundled encoders, as `ombre memories import --from ombre-brain` does; the same texts are then loaded into a
second store as our own memories (the same words, times and vectors, as a hold leaves them). MemDaily's
questions about those trajectories (test split) are asked of both, through breath: R@1 / R@5 of the
question's gold messages among breath's cards. The import should find them as well as our own store does.

    python bench/brain_import.py [--memories 5000] [--questions 400]
"""
from __future__ import annotations

import argparse
import hashlib
import tempfile
import time
from pathlib import Path

import evalsets  # beside this script
from recall_eval import recall_at

from ombre.app import open_service
from ombre.memory.breath import BreathRequest, breath
from ombre.memory.model import Memory
from ombre.memory.segment import document
from ombre.memory.sqlite_store import SQLiteStore
from ombre.settings import Settings
from ombre.write.ombre_brain import import_vault, memory_id


def original(store: str, mid: str) -> str:
    return hashlib.sha1(f"{store}:{mid}".encode()).hexdigest()[:12]


def write_vault(root: Path, items: list[tuple[str, str, str]]) -> None:
    """items: (store key, message id, text) → one dynamic bucket each, as Ombre-Brain files them."""
    buckets = root / "buckets"
    (buckets / "_sources").mkdir(parents=True)
    for n, (store, mid, text) in enumerate(items):
        oid = original(store, mid)
        topic = store.split(".")[0].split(":")[0]
        day = f"2025-{1 + n % 12:02d}-{1 + n % 28:02d}"
        created = f"{day}T10:00:00" if n % 5 == 0 else f"'{day}T10:00:00+08:00'"  # a fifth without a zone
        refs = ""
        if n % 2 == 0:
            said = f"用户：{text}\n助手：嗯，我记下了。\n"
            sha = hashlib.sha256(said.encode()).hexdigest()
            (buckets / "_sources" / f"src_{sha}.source").write_text(said, encoding="utf-8")
            refs = f"source_refs:\n- ranges:\n  - - 1\n    - 1\n  ref: src_{sha}\n"
        path = buckets / "dynamic" / topic / f"{day} 10-00-00_{oid}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"---\nactivation_count: 0\narousal: 0.3\ncreated: {created}\ndomain:\n- {topic}\nid: {oid}\n"
                        f"importance: 5\nlast_active: {created}\nname: {day} 10-00-00\n{refs}source_tool: hold\n"
                        f"tags: []\ntype: dynamic\nvalence: 0.5\n---\n\n{text}\n", encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--memories", type=int, default=5_000)
    ap.add_argument("--questions", type=int, default=400)
    args = ap.parse_args()
    md = evalsets.memdaily()
    items, stores = [], []
    for key in sorted(md.stores):
        if len(items) >= args.memories:
            break
        stores.append(key)
        items += [(key, mid, text) for mid, text in md.stores[key]]
    items = items[:args.memories]
    kept = {(s, m) for s, m, _ in items}
    cases = [c for c in md.cases if c.split == "test" and c.store in stores and c.gold
             and all((c.store, g) in kept for g in c.gold)][:args.questions]

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_vault(root / "vault", items)
        service = open_service(Settings.from_env({"HOME": str(root / "home")}), arbitrate=False)
        try:
            started = time.perf_counter()
            report = import_vault(service, root / "vault")
            seconds = time.perf_counter() - started
            imported, encoders = service.store, service.encoders
            texts = {(s, m): t for s, m, t in items}
            # our own store: the same words, times and vectors, written as a hold writes them
            own = SQLiteStore(root / "own.db")
            found = imported.get_many([memory_id(original(s, m), t) for s, m, t in items])
            index = {key: imported.vectors(key) for key in encoders}
            rows = []
            for s, m, t in items:
                got = found[memory_id(original(s, m), t)]
                mine = Memory(content=t, id=original(s, m), created=got.created, last_active=got.last_active)
                rows.append((mine, document(t), {k: ix.matrix[ix.positions[got.id]] for k, ix in index.items()}))
            own.add_many(rows)
            scores = {}
            for name, store, ident in (("imported from Ombre-Brain", imported, lambda s, m: memory_id(
                    original(s, m), texts[s, m])), ("our own memories", own, original)):
                r1 = r5 = 0.0
                for c in cases:
                    gold = frozenset(ident(c.store, g) for g in c.gold)
                    cards = breath(store, BreathRequest(c.query, max_results=5, max_tokens=100_000),
                                   encoders=encoders, touch=False).cards
                    order = [card.id for card in cards]
                    r1 += recall_at(order, gold, 1)
                    r5 += recall_at(order, gold, 5)
                scores[name] = (r1 / len(cases), r5 / len(cases))
            own.close()
        finally:
            service.close()
    print(f"Ombre-Brain vault of {len(items):,} generated buckets ({len(stores)} MemDaily trajectories), "
          f"{len(cases)} test questions")
    print(f"import: {seconds:.1f} s ({len(items) / seconds:.0f} memories/s), {report.added:,} added, "
          f"{report.embedded:,} vectors, {report.quoted:,} quoted from sources, {report.unconfirmed:,} 未确认, "
          f"{report.zoneless:,} times read as Asia/Shanghai, {len(report.refused)} refused")
    print(f"{'breath over the whole vault':<34}{'R@1':>7}{'R@5':>7}")
    for name, (r1, r5) in scores.items():
        print(f"{name:<34}{r1:>7.3f}{r5:>7.3f}")


if __name__ == "__main__":
    main()
