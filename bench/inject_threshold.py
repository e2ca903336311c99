"""How close must a memory be before the hook shows it unasked? A gate per set of encoders, fitted on dev.

The objective is the person's: of the turns that need a memory, the share whose memory is shown ("gold
shown"), at a noise they accept — at most TARGET cards on average for a turn about nothing in the store.
Four labelled sets (bench/evalsets.py), each split once into dev and test, all of them chat turns with the
turns before them where the set has them:
- hook: companion chats turn by turn (Chinese and English; daily life, a child, a couple, an old woman, a
  student); each turn that needs a memory against its own person's store (related) and against another
  person's of the same language (about nothing in it); the turns that need none against their own store
  (reported apart: "own turn");
- dialogue: MemDaily questions turned into chats, against their own store and another trajectory's of
  another topic;
- companion: hand-written prompts, 44 % of them about nothing in the store (gold empty);
- longchat: English long chats, each question against its own person's store and another person's.
For every prompt breath runs as the hook calls it (the prompt and the recent turns), with both encoders,
with both but e5 reading each form's last E5_MIN_TOKENS tokens (the hook when time is short), and with USE
alone (the hook's fast path when not even that would fit its deadline); its five best
cards are "shown" when they pass the gate (fusion.Gate: a weighted sum of the card's evidence,
fusion.gate_features, against one bar for the answer's first card and another for the cards after it).

`--tune` fits, on dev, each gate's weights (a logistic regression: a gold card of a related turn against
any card of an unrelated turn, each set weighing the same) and then its two bars together: the most gold
shown (mean over the sets) with at most TARGET cards per unrelated prompt on every set, all cards
counted. It prints the gates as fusion.GATES spells them. The test split is reported with the gates in
use: both encoders (the hook), the first card alone, e5 alone (a memory without its USE vector), and USE
alone as the fast path runs it: precision (shown cards that are gold), gold shown (gold memories shown, of
those the prompts have), and cards per related, unrelated and own turn.

`--small` asks the same kinds of prompt of stores of 5 to 16 memories (a new user's first weeks): each
related prompt's gold with others of its store, each unrelated one's store cut likewise; it reports the
gates in use there beside the gates for a store too small to stand out (sims and agreement alone).

    python bench/inject_threshold.py [--tune] [--rows FILE] [--small]
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

import evalsets  # beside this script
import numpy as np
from recall_eval import CACHE, NOW, Cached, build_stores

from ombre.memory.breath import BreathRequest, breath
from ombre.memory.embed import E5Embedder, USEEmbedder
from ombre.memory.fusion import E5_ONLY, E5_USE, GATES, USE_ONLY, Gate, gate_features, gate_key
from ombre.memory.signals import E5_MIN_TOKENS, E5_TOKENS

TARGET = 0.28  # cards per unrelated prompt chosen for on dev (the bound is 0.3: room for new data)



SETS = ("hook", "dialogue", "companion", "longchat")
# breath with both encoders; with e5 reading its shortest cut (the hook when time is short); USE alone (the
# hook's fast path, when not even that fits): encoders and e5's tokens a form
MODES = {"both": (("e5", "use"), E5_TOKENS), "short": (("e5", "use"), E5_MIN_TOKENS), "use": (("use",), E5_TOKENS)}


def _twin(c: evalsets.Case, keys: list[str], rng: random.Random, same) -> list[evalsets.Case]:
    """The prompt asked of another person's store (whose life is different: `same` says who may not be
    chosen), where it is about nothing by construction."""
    others = [k for k in keys if k != c.store and not same(k, c.store)]
    return [dataclasses.replace(c, store=rng.choice(others), gold=frozenset(), kind="unrelated",
                                key=c.key + ":x")] if others else []


def cases(sets: dict[str, evalsets.EvalSet]) -> list[evalsets.Case]:
    """The companion prompts as written; every other set's related prompts with one unrelated twin each; the
    hook dialogues' turns that need no memory as they are (reported apart: the person's own life)."""
    out = list(sets["companion"].cases)
    rng = random.Random(13)
    for name in ("hook", "dialogue", "longchat"):
        es = sets[name]
        keys = sorted(es.stores)
        if name == "dialogue":  # another trajectory of another MemDaily file (a file is one topic)
            def same(a, b): return a.split(":")[0] == b.split(":")[0]
        elif name == "hook":  # another person writing in the same language
            lang = {c.store: c.kind.split(":")[0] for c in es.cases}
            keys = [k for k in keys if k in lang]
            def same(a, b): return lang[a] != lang[b]
        else:
            def same(a, b): return False
        for c in es.cases:
            out.append(c)
            if c.gold:
                out += _twin(c, keys, rng, same)
    return out


def collect(cases_, stores, encoders) -> list[dict]:
    rows = []
    for c in cases_:
        per_mode = {}
        for mode, (keys, e5_tokens) in MODES.items():
            r = breath(stores[c.store], BreathRequest(query=c.query, context=c.context or None, max_results=5,
                                                      max_tokens=100_000),
                       encoders={k: encoders[k] for k in keys}, now=NOW, touch=False, e5_tokens=e5_tokens)
            per_mode[mode] = [(card.id in c.gold, gate_features(card.why), card.lead)
                              for card in r.cards]
        about = "related" if c.gold else "unrelated" if c.kind == "unrelated" or c.set == "companion" else "own"
        rows.append({"set": c.set, "split": c.split, "gold": len(c.gold), "about": about, "cards": per_mode})
    return rows


# The gates fitted (fusion.GATES): each reads the features of the encoders it is for, from the rows of the
# mode that runs them, with or without what says how far a card stands out of its store
FITS = [("both", ("e5", "use")), ("both", ("e5",)), ("use", ("use",))]


def names(encoders: tuple[str, ...], out: bool = True) -> list[str]:
    parts = ("sim", "lift", "gap") if out else ("sim",)
    return [f"{part}:{key}" for key in encoders for part in parts] + ["firsts"]


class Cards:
    """One mode's candidate cards as columns (features, gold or not, which set and turn), so that trying a
    pair of bars is a few array comparisons."""

    def __init__(self, rows: list[dict], mode: str, features: list[str]) -> None:
        meta: dict[str, list] = {k: [] for k in ("set", "split", "ok", "about", "lead")}
        x: list[list[float]] = []
        self.gold: dict[tuple[str, str], int] = defaultdict(int)
        self.prompts: dict[tuple[str, str, str], int] = defaultdict(int)
        for row in rows:
            self.gold[row["set"], row["split"]] += row["gold"]
            self.prompts[row["set"], row["split"], row["about"]] += 1
            for ok, feats, lead in row["cards"][mode]:
                for name, value in (("set", row["set"]), ("split", row["split"]), ("ok", ok),
                                    ("about", row["about"]), ("lead", lead)):
                    meta[name].append(value)
                x.append([feats.get(f, 0.0) for f in features])
        self.cols = {k: np.array(v) for k, v in meta.items()}
        self.x = np.array(x, dtype=np.float64).reshape(-1, len(features))
        self.features = features

    def shown(self, gate: Gate) -> np.ndarray:
        scores = gate.bias + self.x @ np.array([gate.weights.get(f, 0.0) for f in self.features])
        return scores >= np.where(self.cols["lead"], gate.first, gate.rest)

    def measure(self, shown: np.ndarray, name: str, split: str) -> dict:
        c = self.cols
        here = shown & (c["set"] == name) & (c["split"] == split)
        related = here & (c["about"] == "related")
        right = related & c["ok"]
        gold = self.gold[name, split]

        def per(about: str) -> float:
            n = self.prompts[name, split, about]
            return (here & (c["about"] == about)).sum() / n if n else float("nan")

        return {"precision": right.sum() / related.sum() if related.sum() else float("nan"),
                "recall": right.sum() / gold if gold else 0.0, "unrelated": per("unrelated"), "own": per("own"),
                "related": per("related")}


def fit(cards: Cards, split: str = "dev", l2: float = 0.01, steps: int = 4000, rate: float = 0.5) -> Gate:
    """The weights of a logistic regression on `split`: a gold card of a related turn (1) against any card of
    an unrelated turn (0), each set and class weighing the same; on the raw features (no bars yet)."""
    c = cards.cols
    positive = (c["about"] == "related") & c["ok"]
    use = (c["split"] == split) & (positive | (c["about"] == "unrelated"))
    weight = np.zeros(len(use))
    for name in SETS:
        for label in (True, False):
            m = use & (c["set"] == name) & (positive == label)
            weight[m] = 1 / max(1, m.sum())
    x, y, weight = cards.x[use], positive[use].astype(float), weight[use]
    mu, sd = x.mean(axis=0), x.std(axis=0) + 1e-9
    z = np.c_[(x - mu) / sd, np.ones(len(x))]
    b = np.zeros(z.shape[1])
    for _ in range(steps):  # gradient descent: a few thousand small steps on a few thousand cards
        p = 1 / (1 + np.exp(-z @ b))
        b -= rate * (z.T @ ((p - y) * weight) / weight.sum() + l2 * np.r_[b[:-1], 0])
    w = b[:-1] / sd
    return Gate({f: round(float(v), 4) for f, v in zip(cards.features, w)}, round(float(b[-1] - w @ mu), 4),
                math.inf, math.inf)


def choose(cards: Cards, gate: Gate, split: str = "dev") -> Gate:
    """The two bars together: the most gold shown (mean over the sets) with at most TARGET cards per
    unrelated prompt on every set, all cards counted; the first card's bar at most the others'."""
    scores = gate.bias + cards.x @ np.array([gate.weights[f] for f in cards.features])
    grid = np.round(np.quantile(scores[cards.cols["split"] == split], np.linspace(0.3, 0.999, 100)), 3)
    best, best_recall = gate, -1.0
    for first, rest in itertools.product(grid, grid):
        if rest < first:
            continue
        trial = dataclasses.replace(gate, first=float(first), rest=float(rest))
        per_set = [cards.measure(cards.shown(trial), s, split) for s in SETS]
        if max(m["unrelated"] for m in per_set) > TARGET:
            continue
        recall = float(np.mean([m["recall"] for m in per_set]))
        if recall > best_recall + 1e-9:
            best, best_recall = trial, recall
    return best


def table(rows: list[dict], split: str, title: str) -> None:
    print(f"\n{title}")
    print(f"{'gate':<40}{'set':<11}{'precision':>10}{'gold shown':>11}{'cards/related':>14}"
          f"{'cards/unrelated':>16}{'cards/own turn':>15}")
    both = GATES[E5_USE, True]
    settings = [("both encoders — the hook", "both", ("e5", "use"), True, both),
                ("both, the first card alone", "both", ("e5", "use"), True, dataclasses.replace(both, rest=math.inf)),
                ("e5 alone (no USE vector)", "both", ("e5",), True, GATES[E5_ONLY, True]),
                (f"both, e5 at {E5_MIN_TOKENS} tokens (short of time)", "short", ("e5", "use"), True, both),
                ("use alone — the hook's fast path", "use", ("use",), True, GATES[USE_ONLY, True]),
                ("both, in a store too small to stand out", "both", ("e5", "use"), False,
                 GATES[E5_USE, False])]
    for name, mode, encoders, out, gate in settings:
        cards = Cards(rows, mode, names(encoders, out))
        shown = cards.shown(gate)
        for s in SETS:
            m = cards.measure(shown, s, split)
            print(f"{name:<40}{s:<11}{m['precision']:>10.3f}{m['recall']:>11.3f}{m['related']:>14.3f}"
                  f"{m['unrelated']:>16.3f}{m['own']:>15.3f}")


SMALL_SIZES = (5, 8, 12, 16)


def small_stores(sets: dict[str, evalsets.EvalSet], encoders: dict, split: str, per_set: int = 120) -> None:
    """The gates on stores of a few memories (SMALL_SIZES): up to `per_set` related and as many unrelated
    prompts a set, each against a store cut to a size drawn at random (the related prompt's gold kept)."""
    rng = random.Random(29)
    chosen: list[evalsets.Case] = []
    prompts = [c for c in cases(sets) if c.split == split]
    for name in SETS:
        related = [c for c in prompts if c.set == name and c.gold]
        unrelated = [c for c in prompts
                     if c.set == name and not c.gold and (c.kind == "unrelated" or name == "companion")]
        chosen += rng.sample(related, min(per_set, len(related))) + rng.sample(unrelated, min(per_set, len(unrelated)))
    tally: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
    for c in chosen:
        items = sets[c.set].stores[c.store]
        others = [it for it in items if it[0] not in c.gold]
        pick = [it for it in items if it[0] in c.gold]
        pick += rng.sample(others, max(0, min(len(others), rng.choice(SMALL_SIZES) - len(pick))))
        store = build_stores({c.set: evalsets.EvalSet(c.set, {c.store: pick}, [])}, encoders, {c.store})[c.store]
        r = breath(store, BreathRequest(query=c.query, context=c.context or None, max_results=5, max_tokens=100_000),
                   encoders=encoders, now=NOW, touch=False)
        store.close()
        for label, small_only in (("in use", False), ("too small to stand out", True)):
            shown = []
            for card in r.cards:
                gate, features = GATES[gate_key(card.why)], gate_features(card.why)
                if small_only:  # as if the store were under LIFT_FROM: its cosines and agreement alone
                    gate = GATES[E5_USE, False]
                    features = {k: v for k, v in features.items() if k.startswith("sim:") or k == "firsts"}
                if gate.passes(features, card.lead):
                    shown.append(card.id in c.gold)
            t = tally[label, c.set]
            if c.gold:
                t[0] += len(c.gold)
                t[1] += sum(shown)
            else:
                t[2] += 1
                t[3] += len(shown)
    print(f"\n{split} split, stores of {'/'.join(map(str, SMALL_SIZES))} memories "
          f"(up to {per_set} related and {per_set} unrelated prompts a set)")
    print(f"{'gates':<24}" + "".join(f"{name:>22}" for name in SETS) + f"{'mean gold':>11}")
    print(f"{'':<24}" + f"{'gold / unrelated':>22}" * len(SETS))
    for label in ("in use", "too small to stand out"):
        cells = [tally[label, name] for name in SETS]
        gold = [t[1] / t[0] if t[0] else float("nan") for t in cells]
        print(f"{label:<24}" + "".join(f"{g:>14.3f} / {t[3] / t[2] if t[2] else float('nan'):.3f}"
                                       for g, t in zip(gold, cells)) + f"{np.nanmean(gold):>11.3f}")


def load() -> tuple[dict[str, evalsets.EvalSet], dict, dict]:
    """The sets, recall_eval's vector cache, and both encoders remembering through it."""
    memo = pickle.loads(CACHE.read_bytes()) if CACHE.exists() else {}
    return evalsets.load(SETS), memo, {"e5": Cached(E5Embedder(), memo), "use": Cached(USEEmbedder(), memo)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tune", action="store_true", help="choose the gates on dev, then report test")
    ap.add_argument("--rows", type=Path, default=None, help="reuse (or write) the collected cards here")
    ap.add_argument("--small", action="store_true", help="the gates on stores of a few memories, dev and test")
    args = ap.parse_args()
    started = time.perf_counter()
    if args.small:
        sets, memo, encoders = load()
        for split in ("dev", "test"):
            small_stores(sets, encoders, split)
        CACHE.write_bytes(pickle.dumps(memo))
        print(f"\n({time.perf_counter() - started:.0f} s)")
        return
    if args.rows and args.rows.exists():
        rows = pickle.loads(args.rows.read_bytes())
    else:
        sets, memo, encoders = load()
        todo = cases(sets)
        stores = build_stores(sets, encoders, {c.store for c in todo})
        rows = collect(todo, stores, encoders)
        CACHE.write_bytes(pickle.dumps(memo))
        if args.rows:
            args.rows.write_bytes(pickle.dumps(rows))
    n = {s: (sum(1 for r in rows if r["split"] == "test" and r["set"] == s and r["about"] == "related"),
             sum(1 for r in rows if r["split"] == "test" and r["set"] == s and r["about"] == "unrelated"))
         for s in SETS}
    print("test prompts (related / about nothing): " + ", ".join(f"{s} {a}/{b}" for s, (a, b) in n.items()))
    if args.tune:
        print(f"chosen on dev (most gold shown with at most {TARGET} cards per unrelated prompt on every set):")
        for mode, encoders in FITS:
            for out in (True, False):
                key = (frozenset(encoders), out)
                cards = Cards(rows, mode, names(encoders, out))
                print(f"  {key}: {choose(cards, fit(cards))},\n  in use: {GATES.get(key)}")
        if len(GATES) == 2 * len(FITS):
            table(rows, "dev", "dev split, settings in use")
    if len(GATES) == 2 * len(FITS):
        table(rows, "test", "test split, settings in use")
    print(f"\n({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
