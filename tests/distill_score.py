"""Scoring distillation on the labelled snippets in tests/data/distill_labelled.jsonl (written for this
project): a candidate is right when its quote and an expected quote contain one another; precision is the
share of candidates that are right, recall the share of expected items captured. Also checks the two
rules that admit no exception: every quote is in the person's own turns, none comes from the assistant."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ombre.write.async_distill import Candidate, Turn

LABELLED = Path(__file__).with_name("data") / "distill_labelled.jsonl"


@dataclass
class Score:
    cases: int = 0
    produced: int = 0
    right: int = 0
    expected: int = 0
    captured: int = 0
    invented_quotes: list[str] = field(default_factory=list)
    from_assistant: list[str] = field(default_factory=list)

    @property
    def precision(self) -> float:
        return self.right / self.produced if self.produced else 1.0

    @property
    def recall(self) -> float:
        return self.captured / self.expected if self.expected else 1.0


def _match(a: str, b: str) -> bool:
    a, b = a.strip("。！!，, "), b.strip("。！!，, ")
    return bool(a and b) and (a in b or b in a)


def score(extract: Callable[[list[Turn]], list[Candidate]]) -> Score:
    s = Score()
    for line in LABELLED.read_text(encoding="utf-8").splitlines():
        case = json.loads(line)
        turns = [Turn(who, text, f"u{n}") for n, (who, text) in enumerate(case["turns"])]
        got = extract(turns)
        s.cases += 1
        s.produced += len(got)
        s.expected += len(case["expect"])
        s.right += sum(any(_match(c.quote, e) for e in case["expect"]) for c in got)
        s.captured += sum(any(_match(c.quote, e) for c in got) for e in case["expect"])
        person = [t.text for t in turns if t.who == "person"]
        assistant = [t.text for t in turns if t.who == "assistant"]
        s.invented_quotes += [c.quote for c in got if not any(c.quote in p for p in person)]
        s.from_assistant += [c.quote for c in got if any(c.quote in a for a in assistant)
                             and not any(c.quote in p for p in person)]
    return s
