"""Distillation quality of the rules backend on the labelled snippets (tests/data/distill_labelled.jsonl).

    python bench/distill_eval.py
"""
from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ombre.write.async_distill import rules_candidates  # noqa: E402
from tests.distill_score import score  # noqa: E402


def main() -> None:
    s = score(rules_candidates)
    print(f"rules backend on {s.cases} labelled snippets holding {s.expected} things worth keeping "
          "(the rest: chit-chat, questions, moods, the assistant's own promises)")
    print(f"distill precision {s.precision:.3f} ({s.right}/{s.produced})  recall {s.recall:.3f} "
          f"({s.captured}/{s.expected})  invented quotes {len(s.invented_quotes)}  from assistant {len(s.from_assistant)}")


if __name__ == "__main__":
    main()
