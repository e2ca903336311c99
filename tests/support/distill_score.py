"""Scoring distillation on labelled chat snippets: the 64 written with the first rules
(tests/data/distill_labelled.jsonl) and the sets written later, blind to the rules
(bench/data/distill_set_*.jsonl). A candidate is right when its quote and an expected quote contain one
another; precision is the share of candidates that are right, recall the share of expected items captured.
Also checks the two rules that admit no exception: every quote is in the person's own turns, none comes
from the assistant.

Each writer named one quote per thing worth keeping, so a snippet like "我对芒果过敏，千万别给我推荐芒果的东西"
expects the allergy and scores the standing rule beside it as wrong. A second reading, done blind to the
rules (bench/data/distill_second_*.jsonl, and the `same`/`also` fields of the sets written with it), adds
per snippet the other spans that state an expected fact in other words (`same`: they capture it too) and
those worth keeping on their own (`also`: right when kept, never required). Scores are given both ways:
`strict` counts only the first reading.

The sets are split once into dev and test by a hash of each snippet's id; the first 64, which the rules
were first written against, are all dev. Rules are tuned on dev only (bench/distill_eval.py --errors dev).
"""
from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ombre.write.async_distill import Candidate, Turn

REPO = Path(__file__).resolve().parents[2]
LABELLED = REPO / "tests" / "data" / "distill_labelled.jsonl"
BLIND = sorted((REPO / "bench" / "data").glob("distill_set_*.jsonl"))
SECOND = REPO / "bench" / "data"


@dataclass
class Case:
    id: str
    category: str
    turns: list[Turn]
    expect: list[str]
    split: str
    same: dict[str, list[str]] = field(default_factory=dict)  # expected quote → spans that capture it too
    also: list[str] = field(default_factory=list)  # right when kept, not required

    def accepts(self, quote: str, strict: bool = False) -> bool:
        spans = self.expect if strict else [*self.expect, *self.also, *(a for alts in self.same.values() for a in alts)]
        return any(_match(quote, e) for e in spans)

    def captures(self, expected: str, quote: str, strict: bool = False) -> bool:
        return any(_match(quote, e) for e in [expected, *([] if strict else self.same.get(expected, []))])


@dataclass
class Score:
    cases: int = 0
    produced: int = 0
    right: int = 0
    expected: int = 0
    captured: int = 0
    invented_quotes: list[str] = field(default_factory=list)
    from_assistant: list[str] = field(default_factory=list)
    wrong: list[tuple[str, str]] = field(default_factory=list)  # (case id, quote) stored but not expected
    missed: list[tuple[str, str]] = field(default_factory=list)  # (case id, expected) not captured

    @property
    def precision(self) -> float:
        return self.right / self.produced if self.produced else 1.0

    @property
    def recall(self) -> float:
        return self.captured / self.expected if self.expected else 1.0


def split_of(case_id: str) -> str:
    return "dev" if hashlib.sha1(case_id.encode()).digest()[0] % 2 == 0 else "test"


def _rows(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def load() -> list[Case]:
    cases = []
    for path in [LABELLED, *BLIND]:
        first = path == LABELLED
        name = "first" if first else path.stem.removeprefix("distill_set_")
        second = {str(r["id"]): r for r in _rows(SECOND / f"distill_second_{name}.jsonl")}
        for raw in _rows(path):
            cid = f"first-{raw['id']}" if first else str(raw["id"])
            turns = [Turn(who, text, f"u{n}") for n, (who, text) in enumerate(raw["turns"])]
            extra = second.get(str(raw["id"]), {})
            same = {e: [*raw.get("same", {}).get(e, []), *extra.get("same", {}).get(e, [])] for e in raw["expect"]}
            cases.append(Case(cid, raw.get("category", "first"), turns, raw["expect"],
                              "dev" if first else split_of(cid), {e: a for e, a in same.items() if a},
                              [*raw.get("also", []), *extra.get("also", [])]))
    return cases


def _match(a: str, b: str) -> bool:
    a, b = a.strip("。！!，, "), b.strip("。！!，, ")
    return bool(a and b) and (a in b or b in a)


def score(extract: Callable[[list[Turn]], list[Candidate]], cases: list[Case] | None = None,
          strict: bool = False) -> Score:
    """Score `extract` on `cases` (default: the first 64 snippets); `strict` by the first reading alone."""
    s = Score()
    for case in cases if cases is not None else [c for c in load() if c.id.startswith("first-")]:
        got = extract(case.turns)
        s.cases += 1
        s.produced += len(got)
        s.expected += len(case.expect)
        for c in got:
            if case.accepts(c.quote, strict):
                s.right += 1
            else:
                s.wrong.append((case.id, c.quote))
        for e in case.expect:
            if any(case.captures(e, c.quote, strict) for c in got):
                s.captured += 1
            else:
                s.missed.append((case.id, e))
        person = [t.text for t in case.turns if t.who == "person"]
        assistant = [t.text for t in case.turns if t.who == "assistant"]
        s.invented_quotes += [c.quote for c in got if not any(c.quote in p for p in person)]
        s.from_assistant += [c.quote for c in got if any(c.quote in a for a in assistant)
                             and not any(c.quote in p for p in person)]
    return s


def by_category(extract: Callable[[list[Turn]], list[Candidate]], cases: list[Case],
                strict: bool = False) -> dict[str, Score]:
    groups: dict[str, list[Case]] = defaultdict(list)
    for c in cases:
        groups[c.category].append(c)
    return {name: score(extract, group, strict) for name, group in sorted(groups.items())}
