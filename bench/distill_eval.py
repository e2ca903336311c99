"""Distillation quality on labelled companion-chat snippets (tests/distill_score.py), split once into dev
and test; the rules are tuned on dev only and test is reported. With --backend anthropic|openai the same
snippets go through that model backend, talking to a fake server that speaks the vendor's wire format and
answers each snippet's labelled items — a proof of the plumbing (prompt, JSON, quote check), not of a model.

With --examples the rules run with the labelled examples' vote (write/distill_rules.py: the USE encoder,
examples from src/ombre/write/distill_examples.jsonl); --export rewrites that file from the dev split.

    python bench/distill_eval.py [--errors dev] [--backend rules|anthropic|openai] [--examples] [--export]
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ombre.settings import Settings  # noqa: E402
from ombre.write import distill_rules  # noqa: E402
from ombre.write.async_distill import model_candidates, rules_candidates  # noqa: E402
from ombre.write.llm import from_settings  # noqa: E402
from tests.distill_score import _match, by_category, load, score  # noqa: E402

KINDS = {"promise_asked": "承诺", "standing_rule": "规则", "food_allergy": "偏好", "names": "关系",
         "fear_secret": "感受", "family_event": "事件", "plan_event": "事件", "preference_fact": "偏好"}


def export(cases, path: Path) -> int:
    """Every clause of the dev split's person turns, labelled keep or not, with the kind its snippet's
    category names (the examples the rules' vote reads)."""
    rows, seen = [], set()
    for c in cases:
        for t in c.turns:
            if t.who != "person":
                continue
            for clause in distill_rules.clauses(t.text):
                if clause in seen:
                    continue
                seen.add(clause)
                keep = any(_match(clause, e) for e in c.expect)
                rows.append({"text": clause, "keep": keep, "kind": KINDS.get(c.category, "") if keep else ""})
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return len(rows)


def _line(name: str, s) -> str:
    return (f"{name:<16} precision {s.precision:.3f} ({s.right}/{s.produced})  recall {s.recall:.3f} "
            f"({s.captured}/{s.expected})  invented quotes {len(s.invented_quotes)}  from assistant "
            f"{len(s.from_assistant)}")


def oracle_backend(kind: str, cases):
    """A fake of `kind` whose answer to each snippet is that snippet's labelled items, and the extractor
    that asks it through the real backend."""
    from tests.fake_anthropic import FakeAnthropic, Reply
    from tests.fake_openai import FakeOpenAI

    fake = FakeAnthropic() if kind == "anthropic" else FakeOpenAI()
    fake.__enter__()  # both fakes are context managers; left open for the whole run
    home = Path(tempfile.mkdtemp())
    settings = Settings.from_env({"HOME": str(home), "OMBRE_LLM": kind, "OMBRE_LLM_MODEL": "oracle",
                                  "OMBRE_LLM_BASE_URL": fake.url, "OMBRE_LLM_API_KEY": "sk-test",
                                  "OMBRE_LLM_DAILY_CALLS": "100000", "OMBRE_LLM_DAILY_TOKENS": "100000000"})
    model = from_settings(settings)
    by_turns = {id(c.turns): c for c in cases}

    def extract(turns):
        case = by_turns[id(turns)]
        text = json.dumps({"candidates": [{"type": "事件", "content": e, "quote": e, "importance": 6}
                                          for e in case.expect]}, ensure_ascii=False)
        if kind == "anthropic":
            fake.replies.append(Reply.text(text))
        else:
            fake.replies.append(text)
        return model_candidates(model, turns)

    return extract, fake


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--errors", choices=["dev"], help="list what the rules store wrongly and miss on dev")
    ap.add_argument("--backend", default="rules", choices=["rules", "anthropic", "openai"])
    ap.add_argument("--examples", action="store_true", help="the rules with the labelled examples' vote (USE)")
    ap.add_argument("--export", action="store_true", help="rewrite the examples file from the dev split")
    args = ap.parse_args()
    cases = load()
    if args.export:
        n = export([c for c in cases if c.split == "dev"], distill_rules.EXAMPLES)
        print(f"wrote {n} example clauses to {distill_rules.EXAMPLES}")
    extract, fake = rules_candidates, None
    if args.examples:
        from ombre.memory.embed import USEEmbedder

        examples = distill_rules.Examples(USEEmbedder())
        extract = lambda turns: rules_candidates(turns, examples)  # noqa: E731
    if args.backend != "rules":
        extract, fake = oracle_backend(args.backend, cases)
    dev, test = [c for c in cases if c.split == "dev"], [c for c in cases if c.split == "test"]
    label = "rules backend" if fake is None else f"{args.backend} backend behind a fake answering the labels"
    print(f"{label}: {len(cases)} labelled snippets ({sum(len(c.expect) for c in cases)} things worth "
          f"keeping; the rest questions, cancelled plans, jokes, moods, guesses, the assistant's own words), "
          f"split once by id: dev {len(dev)}, test {len(test)}")
    print(_line("distill dev", score(extract, dev)))
    print(_line("distill test", score(extract, test)))
    print("\ntest split by category")
    for name, s in by_category(extract, test).items():
        print(f"  {name:<16} n {s.cases:>3}  precision {s.precision:.3f} ({s.right}/{s.produced})  "
              f"recall {s.recall:.3f} ({s.captured}/{s.expected})")
    if args.errors:
        s = score(extract, dev)
        print("\nstored but not expected (dev):")
        for cid, quote in s.wrong:
            print(f"  {cid}: {quote}")
        print("missed (dev):")
        for cid, expected in s.missed:
            print(f"  {cid}: {expected}")
    if fake is not None:
        fake.__exit__(None, None, None)


if __name__ == "__main__":
    main()
