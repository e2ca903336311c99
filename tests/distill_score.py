"""Scoring distillation on labelled chat snippets: the 64 written with the first rules
(tests/data/distill_labelled.jsonl) and the sets written later, blind to the rules, for issue #15
(bench/data/distill_set_*.jsonl). A candidate is right when its quote and an expected quote contain one
another; precision is the share of candidates that are right, recall the share of expected items captured.
Also checks the two rules that admit no exception: every quote is in the person's own turns, none comes
from the assistant.

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

REPO = Path(__file__).resolve().parents[1]
LABELLED = Path(__file__).with_name("data") / "distill_labelled.jsonl"
BLIND = sorted((REPO / "bench" / "data").glob("distill_set_*.jsonl"))


@dataclass
class Case:
    id: str
    category: str
    turns: list[Turn]
    expect: list[str]
    split: str


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


def load() -> list[Case]:
    cases = []
    for path in [LABELLED, *BLIND]:
        first = path == LABELLED
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            raw = json.loads(line)
            cid = f"first-{raw['id']}" if first else str(raw["id"])
            turns = [Turn(who, text, f"u{n}") for n, (who, text) in enumerate(raw["turns"])]
            cases.append(Case(cid, raw.get("category", "first"), turns, raw["expect"],
                              "dev" if first else split_of(cid)))
    return cases


def _match(a: str, b: str) -> bool:
    a, b = a.strip("。！!，, "), b.strip("。！!，, ")
    return bool(a and b) and (a in b or b in a)


def score(extract: Callable[[list[Turn]], list[Candidate]], cases: list[Case] | None = None) -> Score:
    """Score `extract` on `cases` (default: the first 64 snippets)."""
    s = Score()
    for case in cases if cases is not None else [c for c in load() if c.id.startswith("first-")]:
        got = extract(case.turns)
        s.cases += 1
        s.produced += len(got)
        s.expected += len(case.expect)
        for c in got:
            if any(_match(c.quote, e) for e in case.expect):
                s.right += 1
            else:
                s.wrong.append((case.id, c.quote))
        for e in case.expect:
            if any(_match(c.quote, e) for c in got):
                s.captured += 1
            else:
                s.missed.append((case.id, e))
        person = [t.text for t in case.turns if t.who == "person"]
        assistant = [t.text for t in case.turns if t.who == "assistant"]
        s.invented_quotes += [c.quote for c in got if not any(c.quote in p for p in person)]
        s.from_assistant += [c.quote for c in got if any(c.quote in a for a in assistant)
                             and not any(c.quote in p for p in person)]
    return s


def by_category(extract: Callable[[list[Turn]], list[Candidate]], cases: list[Case]) -> dict[str, Score]:
    groups: dict[str, list[Case]] = defaultdict(list)
    for c in cases:
        groups[c.category].append(c)
    return {name: score(extract, group) for name, group in sorted(groups.items())}
