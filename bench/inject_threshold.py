"""How close must a memory be before the hook shows it unasked? Two gates per encoder, chosen on dev.

Three labelled sets (bench/evalsets.py), each split once into dev and test:
- companion: hand-written prompts, 44 % of them about nothing in the store (gold empty);
- memdaily: each question against its own trajectory's store (related), and a question from another
  trajectory against the same store (about nothing in it, by construction);
- longchat: English long chats, each question against its own person's store (related) and against another
  person's (about nothing in it).
For every prompt breath runs as the hook calls it (the prompt and the person's recent turns), once with both
encoders and once with USE alone (the hook's fast path when e5 would not fit its deadline); its five best
cards are "shown" when they pass the gate (breath.is_relevant with the thresholds under test). A shown card
is right when it is a gold memory of the prompt.

A card passes when, for either encoder, its best cosine over the query's forms reaches that encoder's
cosine gate, or it stands out of its store (breath's lift: cosine minus the store's mean, in the encoder's
spreads) by the lift gate. The grid below picks on dev the four gates with the most gold shown (mean over
the sets) subject to fewer than TARGET cards on average for prompts about nothing on every set, and, the
same way, USE's own two gates for the fast path, where it runs alone. Then, with those gates, breath's
near-best distance (breath.near_best: a card far under the best lift among the five is filler): the
tightest that gives up at most RECALL_GIVE of the gold shown on any dev set. The test split is then
reported with the settings in use (embed.E5 / embed.USE, breath.NEAR_BEST), for each encoder alone, both,
both on cosine only (the gates before lift counted), both without the near-best rule, and USE alone as the
fast path runs it: precision (shown cards that are gold), recall (gold memories shown, of those a prompt
has) and cards per unrelated prompt.

    python bench/inject_threshold.py [--tune]
"""
from __future__ import annotations

import argparse
import dataclasses
import itertools
import math
import pickle
import random
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from ombre.memory import embed
from ombre.memory.breath import NEAR_BEST, NEAR_BEST_ALONE, BreathRequest, breath
from ombre.memory.embed import E5Embedder, USEEmbedder

import evalsets  # beside this script
from recall_eval import CACHE, NOW, Cached, build_stores

TARGET = 0.15  # cards per unrelated prompt chosen for on dev (the bound is 0.3: room for new data)
RECALL_GIVE = 0.01  # of the gold shown, what a set may give up for precision (near_best)


SETS = ("companion", "memdaily", "longchat")
MODES = {"both": ("e5", "use"), "use": ("use",)}  # breath with both encoders, and the hook's fast path


def cases(sets: dict[str, evalsets.EvalSet]) -> list[evalsets.Case]:
    """The companion prompts as written; MemDaily and long-chat questions with one unrelated twin each."""
    out = list(sets["companion"].cases)
    rng = random.Random(13)
    for name in ("memdaily", "longchat"):
        es = sets[name]
        keys = sorted(es.stores)
        for c in es.cases:
            out.append(c)
            # another trajectory of another file for MemDaily (a file is one topic), another person's chat
            others = [k for k in keys if k != c.store
                      and (name != "memdaily" or k.split(":")[0] != c.store.split(":")[0])]
            if others:
                out.append(dataclasses.replace(c, store=rng.choice(others), gold=frozenset(), kind="unrelated",
                                               key=c.key + ":x"))
    return out


def collect(cases_, stores, encoders) -> list[dict]:
    rows = []
    for c in cases_:
        per_mode = {}
        for mode, keys in MODES.items():
            r = breath(stores[c.store], BreathRequest(query=c.query, context=c.context or None, max_results=5,
                                                      max_tokens=100_000),
                       encoders={k: encoders[k] for k in keys}, now=NOW, touch=False)
            per_mode[mode] = [(card.id in c.gold, card.why.get("sim", {}), card.why.get("lift", {}))
                              for card in r.cards]
        rows.append({"set": c.set, "split": c.split, "gold": len(c.gold), "cards": per_mode})
    return rows


@dataclasses.dataclass(frozen=True)
class Gates:
    e5: float
    use: float
    e5_lift: float = math.inf
    use_lift: float = math.inf
    near_best: float = math.inf  # how far under the answer's best lift a card may stand (breath.near_best)


class Cards:
    """One mode's shown-card candidates as columns, so that a grid of gates is a few array comparisons.

    `shown` restates breath.is_relevant for one set of gates. That holds while every card of the mode was
    scored by the same encoders (both, or USE alone), which decide its gates there: checked as it loads."""

    def __init__(self, rows: list[dict], mode: str) -> None:
        cols: dict[str, list] = {k: [] for k in ("set", "split", "ok", "related", "e5", "use", "e5_lift",
                                                 "use_lift", "e5_best", "use_best")}
        self.gold: dict[tuple[str, str], int] = defaultdict(int)
        self.unrelated: dict[tuple[str, str], int] = defaultdict(int)
        for row in rows:
            self.gold[row["set"], row["split"]] += row["gold"]
            self.unrelated[row["set"], row["split"]] += not row["gold"]
            best = {key: max((lift.get(key, -math.inf) for _, _, lift in row["cards"][mode]), default=-math.inf)
                    for key in ("e5", "use")}
            for ok, sim, lift in row["cards"][mode]:
                if len(sim) != len(MODES[mode]):
                    raise SystemExit(f"a {mode!r} card was scored by {sorted(sim)}: every memory of the eval "
                                     "stores should have both vectors (rebuild the cache)")
                for name, value in (("set", row["set"]), ("split", row["split"]), ("ok", ok),
                                    ("related", row["gold"] > 0)):
                    cols[name].append(value)
                for key in ("e5", "use"):
                    cols[key].append(sim.get(key, -math.inf))
                    cols[key + "_lift"].append(lift.get(key, -math.inf))
                    cols[key + "_best"].append(best[key])
        self.cols = {k: np.array(v) for k, v in cols.items()}

    def shown(self, g: Gates) -> np.ndarray:
        c = self.cols
        passes = (c["e5"] >= g.e5) | (c["use"] >= g.use) | (c["e5_lift"] >= g.e5_lift) | (c["use_lift"] >= g.use_lift)
        if g.near_best == math.inf:
            return passes
        near = np.zeros_like(passes)
        for key in ("e5", "use"):  # only an encoder that scored the card
            lift = c[key + "_lift"]
            near |= np.isfinite(lift) & (lift >= c[key + "_best"] - g.near_best)
        return passes & near

    def measure(self, shown: np.ndarray, name: str, split: str) -> dict:
        c = self.cols
        here = shown & (c["set"] == name) & (c["split"] == split)
        related, right = here & c["related"], here & c["related"] & c["ok"]
        gold, unrelated = self.gold[name, split], self.unrelated[name, split]
        return {"precision": right.sum() / related.sum() if related.sum() else float("nan"),
                "recall": right.sum() / gold if gold else 0.0,
                "unrelated": (here & ~c["related"]).sum() / unrelated if unrelated else 0.0}


def choose(cards: Cards, alone: bool = False, split: str = "dev") -> Gates:
    """All four gates at once, as breath applies them (any encoder, either way, may vouch for a card); with
    `alone`, USE's two gates for the fast path, where it runs alone."""
    best, best_recall = None, -1.0
    if alone:
        grid = ((math.inf, u, math.inf, lift) for u, lift in
                itertools.product(np.arange(0.30, 0.80, 0.01), [*np.arange(1.0, 6.0, 0.25), math.inf]))
    else:
        grid = itertools.product(np.arange(0.88, 0.955, 0.01), np.arange(0.40, 0.80, 0.01),
                                 np.arange(1.0, 10.0, 0.5), np.arange(1.0, 6.0, 0.25))
    for values in grid:
        gates = Gates(*(round(float(v), 3) for v in values))
        shown = cards.shown(gates)
        per_set = [cards.measure(shown, s, split) for s in SETS]
        if max(m["unrelated"] for m in per_set) >= TARGET:
            continue
        recall = float(np.mean([m["recall"] for m in per_set]))
        if recall > best_recall:
            best, best_recall = gates, recall
    return dataclasses.replace(best, near_best=near_best(cards, best, split))


def near_best(cards: Cards, gates: Gates, split: str = "dev") -> float:
    """The tightest distance under the answer's best lift that gives up at most RECALL_GIVE of the gold shown
    on any set: what precision costs almost no recall."""
    shown = cards.shown(gates)
    free = {s: cards.measure(shown, s, split)["recall"] for s in SETS}
    for near in np.arange(0.25, 4.01, 0.25):
        shown = cards.shown(dataclasses.replace(gates, near_best=float(near)))
        if all(cards.measure(shown, s, split)["recall"] >= free[s] - RECALL_GIVE for s in SETS):
            return float(near)
    return math.inf


def table(rows: list[dict], split: str, title: str) -> None:
    print(f"\n{title}")
    print(f"{'gate':<34}{'set':<11}{'precision':>10}{'recall':>8}{'cards/unrelated':>17}")
    e5, use, off = embed.E5, embed.USE, math.inf
    use_alone, use_alone_lift = use.gates(alone=True)
    gates = Gates(e5.gate, use.gate, e5.lift_gate, use.lift_gate)
    settings = [("e5 alone (both encoders run)", "both", Gates(e5.gate, off, e5.lift_gate, near_best=NEAR_BEST)),
                ("use alone (both encoders run)", "both", Gates(off, use.gate, off, use.lift_gate, NEAR_BEST)),
                ("cosine only (no lift gate)", "both", Gates(e5.gate, use.gate)),
                ("gates only (no near-best)", "both", gates),
                ("e5 or use — breath, the hook", "both", dataclasses.replace(gates, near_best=NEAR_BEST)),
                ("use — the hook's fast path", "use", Gates(off, use_alone, off, use_alone_lift, NEAR_BEST_ALONE))]
    per_mode = {mode: Cards(rows, mode) for mode in ("both", "use")}
    for name, mode, gates in settings:
        cards = per_mode[mode]
        shown = cards.shown(gates)
        for s in SETS:
            m = cards.measure(shown, s, split)
            print(f"{name:<34}{s:<11}{m['precision']:>10.3f}{m['recall']:>8.3f}{m['unrelated']:>17.3f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tune", action="store_true", help="choose the gates on dev, then report test")
    ap.add_argument("--rows", type=Path, default=None, help="reuse (or write) the collected cards here")
    args = ap.parse_args()
    started = time.perf_counter()
    if args.rows and args.rows.exists():
        rows = pickle.loads(args.rows.read_bytes())
    else:
        sets = evalsets.load(SETS)
        memo = pickle.loads(CACHE.read_bytes()) if CACHE.exists() else {}
        encoders = {"e5": Cached(E5Embedder(), memo), "use": Cached(USEEmbedder(), memo)}
        todo = cases(sets)
        stores = build_stores(sets, encoders, {c.store for c in todo})
        rows = collect(todo, stores, encoders)
        CACHE.write_bytes(pickle.dumps(memo))
        if args.rows:
            args.rows.write_bytes(pickle.dumps(rows))
    n = {s: (sum(1 for r in rows if r["split"] == "test" and r["set"] == s and r["gold"]),
             sum(1 for r in rows if r["split"] == "test" and r["set"] == s and not r["gold"])) for s in SETS}
    print("test prompts (related, about nothing): " + ", ".join(f"{s} {a}/{b}" for s, (a, b) in n.items()))
    if args.tune:
        print(f"chosen on dev (most gold shown with < {TARGET} cards per unrelated prompt on every set): "
              f"{choose(Cards(rows, 'both'))}; in use: e5 {embed.E5.gate} / lift {embed.E5.lift_gate}, "
              f"use {embed.USE.gate} / lift {embed.USE.lift_gate}, near best {NEAR_BEST}")
        print(f"USE alone (the fast path), chosen the same way: {choose(Cards(rows, 'use'), alone=True)}; in use: "
              "{} / lift {}".format(*embed.USE.gates(alone=True)) + f", near best {NEAR_BEST_ALONE}")
        table(rows, "dev", "dev split, settings in use")
    table(rows, "test", "test split, settings in use")
    print(f"\n({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
