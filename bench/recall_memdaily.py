"""Chinese recall on MemDaily (../shared/bench/memdaily): keyword-only, vector-only and the fused ranking.

For each trajectory every message is stored as a memory, each question is asked, and recall@k is the
share of the gold message ids found in the top k (averaged over questions). The fusion weight is chosen
on the 01_simple files only (the tuning split) and then reported on every file type.

    python bench/recall_memdaily.py [--files GLOB] [--tune]
"""
from __future__ import annotations

import argparse
import json
import pickle
import re
import sys
import time
from collections import defaultdict
from pathlib import Path

import rjieba

from ombre.memory import breath as breath_mod
from ombre.memory.embed import E5Embedder
from ombre.memory.model import Memory
from ombre.memory.segment import document
from ombre.memory.sqlite_store import SQLiteStore

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "bench" / "memdaily"
TUNE = "01_simple_"


def jieba_only(text: str) -> str:
    """The plain baseline: jieba words, no bigrams, no stop list."""
    return " ".join(w for w in rjieba.cut(text) if re.search(r"\w", w))


def question_scores(store: SQLiteStore, question: str, embedder: E5Embedder) -> tuple[dict, dict]:
    kw = dict(store.keyword_search(breath_mod.query_terms(question), 100))
    ids, matrix = store.vectors()
    sims = matrix @ embedder.query(question)
    return breath_mod._normalise(kw), breath_mod._normalise({ids[i]: float(sims[i]) for i in range(len(ids))},
                                                           breath_mod.SIMILARITY_FLOOR)


def ranked(kw: dict, vec: dict, w: float) -> list[str]:
    keys = set(kw) | set(vec)
    return sorted(keys, key=lambda k: -(w * kw.get(k, 0.0) + (1 - w) * vec.get(k, 0.0)))


def recall(order: list[str], gold: set[str], k: int) -> float:
    return len(gold & set(order[:k])) / len(gold) if gold else 0.0


def run(files: list[Path], embedder: E5Embedder) -> dict[str, list[dict]]:
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
            for q in traj["question_list"]:
                kw, vec = question_scores(store, q["question"], embedder)
                jkw = dict(jstore.keyword_search(jieba_only(q["question"]).split(), 100))
                rows.append({"kw": kw, "vec": vec, "jieba": jkw, "gold": {str(x) for x in q["target_step_id"]}})
            store.close()
            jstore.close()
        per_file[f.name] = rows
    return per_file


def score(rows: list[dict], method: str, w: float) -> tuple[float, float]:
    r1 = r5 = 0.0
    for row in rows:
        if method == "jieba":
            order = sorted(row["jieba"], key=lambda k: -row["jieba"][k])
        elif method == "keyword":
            order = ranked(row["kw"], {}, 1.0)
        elif method == "vector":
            order = ranked({}, row["vec"], 0.0)
        else:
            order = ranked(row["kw"], row["vec"], w)
        r1 += recall(order, row["gold"], 1)
        r5 += recall(order, row["gold"], 5)
    return r1 / len(rows), r5 / len(rows)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", default="*.json")
    ap.add_argument("--cache", type=Path, default=None, help="keep per-question scores here and reuse them")
    args = ap.parse_args()
    files = sorted(DATA.glob(args.files))
    started = time.perf_counter()
    if args.cache and args.cache.exists():
        per_file = pickle.loads(args.cache.read_bytes())
    else:
        per_file = run(files, E5Embedder())
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
        cells = [score(rows, m, w) for m in ("jieba", "keyword", "vector", "fused")]
        print(f"{name:<18} {len(rows):>5}  " + " ".join(f"{a:.3f} {b:.3f}" for a, b in cells))
    print(f"\n({time.perf_counter() - started:.0f} s, {sum(len(r) for r in per_file.values())} questions)",
          file=sys.stderr)


if __name__ == "__main__":
    main()
