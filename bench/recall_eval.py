"""Recall on four evaluation sets (bench/evalsets.py), each split once into dev and test: which memory does
breath find, and does its fusion beat every one of its parts?

For every case the production `retrieve` runs with every signal on (keyword BM25 over the latest utterance
and over the person's recent turns; e5 and USE over each query form), so each signal's own ranking is known;
fusion settings are then chosen on the dev split only (`--tune`: coordinate search over the reciprocal-rank
weights; objective the fused ranking's worst lead over its best single part, R@1 and R@5 on each set, plus
half the mean of R@1 and R@5 over the sets), and the test split is reported with the
settings in use (fusion.FUSION), beside every single signal, each encoder over its forms, and two plain
baselines (jieba-word BM25, e5 of the whole latest utterance). A last table shows what importance,
activation, decay and emotion cost in recall when memories carry random values of them.

R@k is the share of a case's gold memories in the top k, averaged over cases with gold.

    python bench/recall_eval.py [--tune] [--sets memdaily,dialogue,companion,longchat] [--limit N]
                                [--db sqlite|postgresql|both] [--leave-one-out]

--leave-one-out tunes the fusion on every three sets' dev splits and reports the fourth's test split: does
what was chosen hold on a kind of data it was not chosen on?

--db both runs every case against a SQLite and a PostgreSQL store of the same memories (a pgserver
PostgreSQL in a temporary folder) and compares every ranking between them.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import hashlib
import math
import os
import pickle
import random
import re
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import evalsets  # beside this script
import numpy as np
import rjieba

from ombre.clock import iso
from ombre.memory import breath as breath_mod
from ombre.memory.breath import MIN_LOADED, Adjust, BreathRequest
from ombre.memory.embed import LATENT_TERMS, E5Embedder, USEEmbedder, tail
from ombre.memory.fusion import FUSION, Fusion, fuse, settle
from ombre.memory.model import Memory
from ombre.memory.query import Query
from ombre.memory.segment import document
from ombre.memory.signals import E5_TOKENS, signals_for
from ombre.memory.sqlite_store import SQLiteStore
from ombre.memory.store import MemoryStore

# where the encoders' vectors are kept between runs (tests point it at a temporary folder)
CACHE = Path(os.environ.get("OMBRE_BENCH_CACHE") or Path(__file__).resolve().parent / "out" / "cache" / "vectors.pkl")
SIGNALS = [s for s, _ in FUSION.weights]
NOW = dt.datetime(2026, 12, 4, 4, 0, tzinfo=dt.timezone.utc)


class Cached:
    """An encoder whose vectors are remembered by text (and kept on disk between runs)."""

    def __init__(self, inner, memo: dict) -> None:
        self.inner, self.spec = inner, inner.spec
        self.memo = memo.setdefault(inner.spec.key, {})

    def _get(self, kind: str, texts: list[str]) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if (kind, t) not in self.memo]
        for start in range(0, len(todo), 64):
            chunk = todo[start:start + 64]
            vecs = self.inner.passages(chunk) if kind == "p" else self.inner.queries(chunk)
            self.memo.update({(kind, t): v for t, v in zip(chunk, vecs)})
        return np.stack([self.memo[(kind, t)] for t in texts]) if texts else np.zeros((0, self.spec.dim))

    def passages(self, texts: list[str]) -> np.ndarray:
        return self._get("p", texts)

    def queries(self, texts: list[str]) -> np.ndarray:
        return self._get("q", texts)

    def query(self, text: str) -> np.ndarray:
        return self._get("q", [text])[0]

    def tokens(self, text: str) -> int:
        return self.inner.tokens(text)

    def latents(self, texts: list[str], terms: int = LATENT_TERMS) -> list:
        if not hasattr(self.inner, "latents"):
            raise AttributeError("latents")
        todo = [t for t in dict.fromkeys(texts) if ("l", terms, t) not in self.memo]
        self.memo.update({("l", terms, t): v for t, v in zip(todo, self.inner.latents(todo, terms))})
        return [self.memo[("l", terms, t)] for t in texts]


def _h(key: str, n: int) -> int:
    return int(hashlib.sha1(key.encode()).hexdigest(), 16) % n


def attributes(mid: str, store: str) -> dict:
    """Random but fixed importance, activation, age and mood for a memory (the adjustment table)."""
    key = f"{store}:{mid}"
    days = _h(key + "d", 400)
    return {"importance": 1 + _h(key + "i", 10), "activation_count": _h(key + "a", 30),
            "last_active": iso(NOW - dt.timedelta(days=days)), "valence": _h(key + "v", 101) / 100,
            "arousal": _h(key + "r", 101) / 100}


def build_stores(sets: dict[str, evalsets.EvalSet], encoders: dict, used: set[str],
                 postgres_url: str | None = None, hnsw_from: int = 5_000) -> dict[str, MemoryStore]:
    """One store per evaluation store: an in-memory SQLite file each, or, with a PostgreSQL address, one
    namespace each of that database (loaded at once, as `ombre memories migrate` does; a namespace of
    `hnsw_from` memories or more is searched through HNSW indexes of its own)."""
    stores: dict[str, MemoryStore] = {}
    batches = {}
    for es in sets.values():
        for key, items in es.stores.items():
            if key in stores or key in batches or key not in used:
                continue
            texts = [t for _, t in items]
            vecs = {k: e.passages(texts) for k, e in encoders.items()}
            rows = []
            for i, (mid, text) in enumerate(items):
                m = Memory(content=text, id=mid, created="2024-01-01T00:00:00+00:00", **attributes(mid, key))
                rows.append((m, document(text), {k: v[i] for k, v in vecs.items()}))
            latents = list(zip([m for m, _ in items], encoders["e5"].latents(texts)))
            if postgres_url:
                batches[key] = (rows, latents)
            else:
                stores[key] = SQLiteStore(Path(":memory:"))
                stores[key].add_many(rows)
                stores[key].set_latents(latents)
    if batches:
        from ombre.memory.postgres_store import PostgresStore

        names = {key: f"eval{i}" for i, key in enumerate(sorted(batches))}  # store keys hold ':' and '/'
        loader = PostgresStore(postgres_url, hnsw_from=hnsw_from)
        loader.load({names[k]: (rows, [], {}) for k, (rows, _) in batches.items()})
        loader.close()
        for key, (_, latents) in batches.items():
            store = PostgresStore(postgres_url, names[key])
            store.set_latents(latents)
            store.close()
        return OpenOnUse(lambda key: PostgresStore(postgres_url, names[key], hnsw_from=hnsw_from), list(batches))
    return stores


class OpenOnUse(dict):
    """Stores opened when a case asks for one, a few kept open: each PostgreSQL store is a connection, and
    the evaluation has more stores than the server takes clients."""

    def __init__(self, opener, keys: list[str], keep: int = 8) -> None:
        super().__init__((k, None) for k in keys)
        self.opener, self.keep, self.open = opener, keep, {}

    def __getitem__(self, key: str) -> MemoryStore:
        if key not in self:
            raise KeyError(key)
        if key not in self.open:
            if len(self.open) >= self.keep:
                oldest = next(iter(self.open))
                self.open.pop(oldest).close()
            self.open[key] = self.opener(key)
        return self.open[key]


def jieba_words(text: str) -> list[str]:
    return [w for w in rjieba.cut(text) if re.search(r"\w", w)]


def gather(sets, stores, encoders, jieba_stores) -> dict[str, list[dict]]:
    """Per case: the production signals (signals.signals_for), and the rankings that only serve as
    comparisons: e5 over the latest words where breath embeds the recent turns instead, and the plain
    baselines."""
    out: dict[str, list[dict]] = {}
    for name, es in sets.items():
        rows = []
        contents = {key: dict(items) for key, items in es.stores.items()}
        for c in es.cases:
            if c.store not in stores:
                continue
            store = stores[c.store]
            query = Query.build(c.query, c.context)
            sig = signals_for(store, query, encoders=encoders)
            rank = dict(sig.rankings)
            index = store.vectors("e5")
            if "e5:latest" not in rank:
                sims = index.matrix @ encoders["e5"].query(tail(query.latest, E5_TOKENS, encoders["e5"].tokens)[0])
                rank["e5:latest"] = [index.ids[i] for i in np.argsort(-sims)[:100]]
            rank["jieba"] = [mid for mid, _ in jieba_stores[c.store].keyword_search(jieba_words(c.query), 100)]
            sims = index.matrix @ encoders["e5"].query(c.query)
            rank["e5 whole"] = [index.ids[i] for i in np.argsort(-sims)[:100]]
            rows.append({"case": c, "signals": sig, "rank": rank, "contents": contents[c.store],
                         "latest": query.latest})
        out[name] = rows
    return out


def recall_at(order: list[str], gold: frozenset[str], k: int) -> float:
    return len(gold & set(order[:k])) / len(gold)


def score(rows: list[dict], order_of) -> tuple[float, float]:
    rows = [r for r in rows if r["case"].gold]
    if not rows:
        return float("nan"), float("nan")
    r1 = r5 = 0.0
    for r in rows:
        order = order_of(r)
        r1 += recall_at(order, r["case"].gold, 1)
        r5 += recall_at(order, r["case"].gold, 5)
    return r1 / len(rows), r5 / len(rows)


def fused_order(fusion: Fusion):
    """The order breath gives before its adjustments: fused, then the best MIN_LOADED (the memories breath
    reads at least) settled by their own words (fusion.settle)."""
    def order(row: dict) -> list[str]:
        scores = fuse(row["signals"], fusion)
        ranked = sorted(scores, key=lambda m: -scores[m])
        read = ranked[:MIN_LOADED]
        factors, head = settle(ranked, {m: row["contents"][m] for m in read}, row["latest"], fusion)
        return sorted(read, key=lambda m: (m != head, -scores[m] * factors[m])) + ranked[MIN_LOADED:]
    return order


def only(fusion: Fusion, encoder: str) -> Fusion:
    """The fusion restricted to one encoder's signals (its forms fused, no keywords, no other encoder)."""
    return dataclasses.replace(
        fusion, weights=tuple((s, w if s.startswith(encoder + ":") else 0.0) for s, w in fusion.weights),
        evidence=tuple((n, w if n == encoder else 0.0) for n, w in fusion.evidence))


def part_orders(fusion: Fusion) -> dict:
    """Each part the fusion is made of, as the ranking it gives a case: every single signal, and each
    encoder over its forms."""
    cols = {s: (lambda r, s=s: r["rank"].get(s, [])) for s in SIGNALS}
    cols.update({f"{enc} alone": fused_order(only(fusion, enc)) for enc in ("e5", "use")})
    return cols


def parts(rows: list[dict], fusion: Fusion) -> dict[str, tuple[float, float]]:
    """R@1/R@5 of each part (part_orders)."""
    return {name: score(rows, f) for name, f in part_orders(fusion).items()}


BAR = "e5 whole"  # the plain baseline the fusion must never fall below, on any set


def leads(per_set: dict[str, list[dict]], fusion: Fusion) -> dict[str, tuple[float, float]]:
    """Per set, how far the fused R@1 and R@5 stand above the best of its parts and of plain e5 over the
    whole question (negative: one of them beats it)."""
    out = {}
    for name, rows in per_set.items():
        p = [*parts(rows, fusion).values(), score(rows, lambda r: r["rank"].get(BAR, []))]
        f1, f5 = score(rows, fused_order(fusion))
        out[name] = (f1 - max(a for a, _ in p if a == a), f5 - max(b for _, b in p if b == b))
    return out


def lead_intervals(rows: list[dict], fusion: Fusion, draws: int = 2000) -> list[tuple[float, float]]:
    """How sure a lead is: a paired bootstrap of fused minus the best part (per k), over the set's cases."""
    rows = [r for r in rows if r["case"].gold]
    cols = {**part_orders(fusion), BAR: lambda r: r["rank"].get(BAR, [])}
    named = {name: score(rows, f) for name, f in cols.items()}
    fused = fused_order(fusion)
    rng = np.random.default_rng(0)
    picks = [rng.integers(0, len(rows), len(rows)) for _ in range(draws)]
    out = []
    for i, k in enumerate((1, 5)):
        best = max((name for name in named if named[name][i] == named[name][i]), key=lambda n: named[n][i])
        diff = np.array([recall_at(fused(r), r["case"].gold, k) - recall_at(cols[best](r), r["case"].gold, k)
                         for r in rows])
        means = [diff[p].mean() for p in picks]
        out.append((float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))))
    return out


def objective(per_set: dict[str, list[dict]], fusion: Fusion) -> float:
    """The issue's bar is that fusion beats every part on every set, so the worst lead counts first; the
    mean recall breaks ties between settings that lead alike."""
    worst = min(min(pair) for pair in leads(per_set, fusion).values())
    mean = float(np.mean([sum(score(rows, fused_order(fusion))) / 2 for rows in per_set.values()]))
    return worst + 0.5 * mean


def _tries(fusion: Fusion):
    for k in (2.0, 3.0, 5.0, 10.0, 20.0):
        yield dataclasses.replace(fusion, k=k)
    for share in (0.0, 0.2, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0):
        yield dataclasses.replace(fusion, evidence_share=share)
        yield dataclasses.replace(fusion, head_share=share)
    for field_name in ("weights", "evidence", "latin"):
        pairs = getattr(fusion, field_name)
        for i, (name, _) in enumerate(pairs):
            for w in (0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0):
                changed = list(pairs)
                changed[i] = (name, w)
                yield dataclasses.replace(fusion, **{field_name: tuple(changed)})


def _nudged(fusion: Fusion, rng: random.Random) -> Fusion:
    """The settings with every weight scaled at random (a zero may wake), and k and the shares moved a step:
    all at once, which finds what one coordinate at a time cannot (two weights that only help together)."""
    def scaled(pairs, wake):
        return tuple((name, round(w * rng.choice(SCALES), 3) if w else rng.choice(wake)) for name, w in pairs)

    def stepped(share):
        return min(1.0, max(0.0, round(share + rng.choice([0, 0, -0.1, 0.1]), 2)))

    return dataclasses.replace(
        fusion, k=rng.choice([fusion.k, fusion.k, 3.0, 5.0, 8.0, 10.0]),
        weights=scaled(fusion.weights, (0.0, 0.0, 0.25, 0.5)), evidence=scaled(fusion.evidence, (0.0, 0.0, 0.25)),
        latin=scaled(fusion.latin, (0.0, 0.25, 0.5)),
        evidence_share=stepped(fusion.evidence_share), head_share=stepped(fusion.head_share))


SCALES = (0.5, 0.75, 1.0, 1.0, 1.5, 2.0)
NUDGES = 900  # random steps after the coordinate passes (about 12 minutes on the four sets)


def tune(dev: dict[str, list[dict]], nudges: int = NUDGES) -> Fusion:
    """Coordinate search from the current settings, then a seeded random local search (each step nudges
    the best so far, or now and then the starting settings), dev split only."""
    best, best_score = FUSION, objective(dev, FUSION)
    print(f"tuning on dev ({sum(len(v) for v in dev.values())} cases): start {best_score:.4f}")
    for _ in range(2):
        for cand in list(_tries(best)):
            if (s := objective(dev, cand)) > best_score + 1e-4:
                best, best_score = cand, s
        print(f"  pass: {best}  → {best_score:.4f}")
    rng = random.Random(0)
    for _ in range(nudges):
        cand = _nudged(best if rng.random() < 0.7 else FUSION, rng)
        if (s := objective(dev, cand)) > best_score + 1e-4:
            best, best_score = cand, s
    print(f"  after {nudges} random steps: {best}  → {best_score:.4f}")
    return best


def leave_one_out(dev: dict[str, list[dict]], test: dict[str, list[dict]]) -> None:
    """Does the fusion hold on a set it was not tuned on? For each set, the settings tuned on the other sets'
    dev splits, on this set's test split, beside the settings in use (tuned on all four)."""
    print("\nleave one set out: tuned on the other sets' dev, this set's test (R@1 / R@5, lead over the best part)")
    lines = []
    for held in dev:
        fusion = tune({name: rows for name, rows in dev.items() if name != held})
        cells = []
        for f in (fusion, FUSION):
            (r1, r5), (l1, l5) = score(test[held], fused_order(f)), leads({held: test[held]}, f)[held]
            cells.append(f"{r1:.3f} / {r5:.3f} (lead {l1:+.3f} / {l5:+.3f})")
        lines.append(f"{held:<11}held out {cells[0]}   in use {cells[1]}")
    print("\n".join(lines))


def report(per_set: dict[str, list[dict]], fusion: Fusion, split: str) -> None:
    print(f"\nR@1 / R@5 on the {split} split (cases with gold)")
    columns = [("jieba BM25", lambda r: r["rank"].get("jieba", [])),
               ("e5 whole", lambda r: r["rank"].get("e5 whole", []))]
    columns += [(s, lambda r, s=s: r["rank"].get(s, [])) for s in SIGNALS]
    for enc in ("e5", "use"):
        columns.append((f"{enc} alone", fused_order(only(fusion, enc))))
    columns.append(("fused", fused_order(fusion)))
    head = f"{'set':<11}{'n':>6}" + "".join(f"{name:>16}" for name, _ in columns)
    print(head)
    for name, rows in per_set.items():
        n = len([r for r in rows if r["case"].gold])
        cells = [score(rows, f) for _, f in columns]
        print(f"{name:<11}{n:>6}" + "".join(f"{a:>9.3f} {b:.3f}" for a, b in cells))
        lead1, lead5 = leads({name: rows}, fusion)[name]
        verdict = "beats" if lead1 > 0 and lead5 > 0 else "DOES NOT beat"  # (and e5 whole)
        (lo1, hi1), (lo5, hi5) = lead_intervals(rows, fusion)
        print(f"{'':<17}fused {verdict} every part and e5 whole (lead over the best of them: @1 {lead1:+.3f},"
              f" @5 {lead5:+.3f})")
        print(f"{'':<17}95% interval of that lead, cases resampled: @1 [{lo1:+.3f}, {hi1:+.3f}], "
              f"@5 [{lo5:+.3f}, {hi5:+.3f}]")
    kinds: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for name, rows in per_set.items():
        for r in rows:
            kinds[(name, r["case"].kind)].append(r)
    print("\nfused by kind: " + ", ".join(f"{s}/{k} {score(v, fused_order(fusion))[0]:.3f} "
                                           f"{score(v, fused_order(fusion))[1]:.3f} (n={len(v)})"
                                           for (s, k), v in sorted(kinds.items()) if any(r['case'].gold for r in v)))


def adjustments(sets, stores, encoders, split: str) -> None:
    """R@1/@5 of the whole breath (fusion × adjustments) with each adjustment alone, all, and none, and how
    many cases each variant moved against none: the cases with fewer gold memories in the top 5, and more."""
    variants = {"none": Adjust(0, 0, 0, 0), "importance": Adjust(breath_mod.ADJUST.importance, 0, 0, 0),
                "activation": Adjust(0, breath_mod.ADJUST.activation, 0, 0),
                "decay": Adjust(0, 0, breath_mod.ADJUST.decay, 0),
                "emotion": Adjust(0, 0, 0, breath_mod.ADJUST.emotion), "all": breath_mod.ADJUST}
    print(f"\nwhat the gentle adjustments cost (breath end to end, {split} split; memories carry random "
          "importance 1–10, 0–29 past recalls, 0–399 days inactive, random valence/arousal; -lost/+gained: "
          "cases with fewer / more gold memories in the top 5 than with none)")
    print(f"{'set':<11}" + "".join(f"{v:>22}" for v in variants))
    moved = {v: [0, 0] for v in variants}
    for name, es in sets.items():
        cases = [c for c in es.split(split) if c.gold and c.store in stores]
        per_case = []
        for adjust in variants.values():
            hits = []
            for c in cases:
                res = breath_mod.breath(stores[c.store], BreathRequest(query=c.query, context=c.context or None,
                                                                       max_results=5, max_tokens=100_000),
                                        encoders=encoders, now=NOW, touch=False, adjust=adjust)
                order = [card.id for card in res.cards]
                hits.append((recall_at(order, c.gold, 1), recall_at(order, c.gold, 5)))
            per_case.append(hits)
        cells = []
        for variant, hits in zip(variants, per_case):
            lost = sum(h[1] < base[1] for h, base in zip(hits, per_case[0]))
            gained = sum(h[1] > base[1] for h, base in zip(hits, per_case[0]))
            moved[variant][0] += lost
            moved[variant][1] += gained
            r1, r5 = (sum(h[i] for h in hits) / len(cases) for i in (0, 1))
            cells.append(f"{r1:.3f} {r5:.3f} -{lost}/+{gained}")
        print(f"{name:<11}" + "".join(f"{cell:>22}" for cell in cells))
    print("all sets, cases out / in of the top 5, and the sign test's two-sided p (could the difference be "
          "chance?): " + ", ".join(f"{v} -{a}/+{b} p={sign_test(a, b):.2f}" for v, (a, b) in moved.items()
                                   if v != "none"))


def sign_test(a: int, b: int) -> float:
    """Two-sided exact binomial p of a against b changes, each equally likely."""
    n = a + b
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(a, b) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def postgres(stack: contextlib.ExitStack) -> str:
    """A PostgreSQL 16 + pgvector server of the pgserver package in a temporary folder, for this run."""
    import pgserver

    folder = stack.enter_context(tempfile.TemporaryDirectory())
    server = pgserver.get_server(Path(folder) / "pg", cleanup_mode="stop")
    stack.callback(server.cleanup)
    return server.get_uri()


def compare(per_backend: dict[str, dict[str, list[dict]]]) -> None:
    """Every ranking the report shows, on both backends, whole sets (dev and test): the same recall within
    0.01 is the bar."""
    (a, rows_a), (b, rows_b) = per_backend.items()
    columns = [(s, lambda r, s=s: r["rank"].get(s, [])) for s in SIGNALS] + [("fused", fused_order(FUSION))]
    print(f"\nR@1 / R@5, {a} → {b}, whole sets")
    worst = 0.0
    for name in rows_a:
        cells = []
        for col, order in columns:
            pa, pb = score(rows_a[name], order), score(rows_b[name], order)
            diffs = [abs(x - y) for x, y in zip(pa, pb) if x == x]
            worst = max([worst, *diffs])
            cells.append(f"{col} {pa[0]:.3f}/{pa[1]:.3f} → {pb[0]:.3f}/{pb[1]:.3f}")
        print(f"{name:<11}" + "; ".join(cells))
    print(f"largest difference: {worst:.4f} ({'within' if worst <= 0.01 else 'NOT within'} 0.01)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", default=",".join(evalsets.SETS))
    ap.add_argument("--tune", action="store_true", help="choose fusion settings on dev, then report test")
    ap.add_argument("--limit", type=int, default=0, help="at most this many cases a set and split (quick runs)")
    ap.add_argument("--no-adjust", action="store_true", help="skip the adjustment table")
    ap.add_argument("--db", choices=["sqlite", "postgresql", "both"], default="sqlite",
                    help="where the stores live; both: also compare every ranking between the two")
    ap.add_argument("--hnsw-from", type=int, default=5_000,
                    help="PostgreSQL: namespaces of this many memories or more are searched through HNSW "
                         "(1: every one, to compare the index path with the exact one)")
    ap.add_argument("--leave-one-out", action="store_true",
                    help="also tune on every three sets' dev and report the fourth's test (about 50 minutes)")
    ap.add_argument("--rows", type=Path, default=None, help="also write every case's rankings here (pickle)")
    args = ap.parse_args()
    started = time.perf_counter()
    sets = evalsets.load(tuple(args.sets.split(",")))
    if args.limit:
        for es in sets.values():
            rng = random.Random(5)
            keep = []
            for split in ("dev", "test"):
                part = es.split(split)
                keep += rng.sample(part, min(args.limit, len(part)))
            es.cases = keep
    memo = pickle.loads(CACHE.read_bytes()) if CACHE.exists() else {}
    encoders = {"e5": Cached(E5Embedder(), memo), "use": Cached(USEEmbedder(), memo)}
    used = {c.store for es in sets.values() for c in es.cases}
    jieba_stores = {}
    for es in sets.values():
        for key, items in es.stores.items():
            if key in used and key not in jieba_stores:
                s = SQLiteStore(Path(":memory:"))
                for mid, text in items:
                    s.add(Memory(content=text, id=mid, created="2024-01-01T00:00:00+00:00"),
                          (" ".join(jieba_words(text)).lower(), ""))
                jieba_stores[key] = s
    backends = ["sqlite", "postgresql"] if args.db == "both" else [args.db]
    with contextlib.ExitStack() as stack:
        url = postgres(stack) if "postgresql" in backends else None
        per_backend = {}
        for backend in backends:
            stores = build_stores(sets, encoders, used, url if backend == "postgresql" else None, args.hnsw_from)
            per_backend[backend] = (stores, gather(sets, stores, encoders, jieba_stores))
        stores, rows = per_backend[backends[0]]
        CACHE.parent.mkdir(parents=True, exist_ok=True)
        CACHE.write_bytes(pickle.dumps(memo))
        if args.rows:
            args.rows.write_bytes(pickle.dumps(rows))
        if len(backends) > 1:
            compare({b: r for b, (_, r) in per_backend.items()})
        print(f"\n(the tables below: the {backends[0]} stores)")
        split_rows = {split: {name: [r for r in v if r["case"].split == split] for name, v in rows.items()}
                      for split in ("dev", "test")}
        fusion = tune(split_rows["dev"]) if args.tune else FUSION
        if args.tune:
            print(f"\nin use: {FUSION} (dev objective {objective(split_rows['dev'], FUSION):.4f})")
            report(split_rows["dev"], fusion, "dev (tuned)")
        report(split_rows["test"], FUSION, "test")
        if args.leave_one_out:
            leave_one_out(split_rows["dev"], split_rows["test"])
        if not args.no_adjust:
            adjustments(sets, stores, encoders, "test")
    print(f"\n({time.perf_counter() - started:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
