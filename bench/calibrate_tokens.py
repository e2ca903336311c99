"""How far ombre's token estimate is from the `usage` Claude Code stored, on real transcripts.

Between two consecutive API requests of a session, the request grows by exactly what was added in
between (the previous reply, tool results, the next prompt). The stored usage gives the true growth
(input + cache creation + cache read); ombre's estimate of the same events gives ours. The system prompt
and tools cancel out, so this measures the estimator alone.

    python bench/calibrate_tokens.py [FILES…]   (default: ../shared/fixtures/claude-code)
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from ombre.transcript.chain import scan

REPO = Path(__file__).resolve().parents[1]
DEFAULT = REPO.parent / "shared" / "fixtures" / "claude-code"


def request_size(usage: dict) -> int:
    return sum(int(usage.get(k) or 0) for k in ("input_tokens", "cache_creation_input_tokens",
                                                "cache_read_input_tokens"))


def steps(path: Path) -> list[tuple[int, int]]:
    """(estimated growth, true growth) between consecutive requests on the active chain."""
    out = []
    with scan(path) as t:
        events = t.measure(t.events)
        usage_of: dict[str, int] = {}
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            msg = obj.get("message") if isinstance(obj.get("message"), dict) else {}
            if obj.get("type") == "assistant" and isinstance(msg.get("usage"), dict) and msg.get("id"):
                usage_of.setdefault(msg["id"], request_size(msg["usage"]))
        prev_size, grown, prev_id = None, 0, None
        for e in events:
            if e.type == "assistant" and e.msg_id and e.msg_id != prev_id and e.msg_id in usage_of:
                size = usage_of[e.msg_id]
                if prev_size is not None and size > prev_size:
                    out.append((grown, size - prev_size))
                prev_size, grown, prev_id = size, 0, e.msg_id
            grown += e.size
    return out


def main(argv: list[str]) -> None:
    files = [Path(a) for a in argv] or sorted(DEFAULT.rglob("*.jsonl"))
    all_steps = []
    print(f"{'transcript':<62} {'steps':>5} {'estimated':>10} {'stored':>10} {'error':>7}")
    for f in files:
        s = steps(f)
        if not s:
            continue
        est, true = sum(a for a, _ in s), sum(b for _, b in s)
        all_steps += s
        name = str(f.relative_to(DEFAULT)) if f.is_relative_to(DEFAULT) else f.name
        print(f"{name[:62]:<62} {len(s):>5} {est:>10,} {true:>10,} {100 * (est - true) / true:>+6.1f}%")
    est, true = sum(a for a, _ in all_steps), sum(b for _, b in all_steps)
    big = [(a, b) for a, b in all_steps if b >= 500]
    mape = sum(abs(a - b) / b for a, b in big) / len(big) if big else 0.0
    print(f"\ntotal over {len(all_steps)} request-to-request steps: estimated {est:,} vs stored {true:,} "
          f"= {100 * (est - true) / true:+.1f}%; mean absolute error on steps ≥ 500 tokens: {100 * mape:.1f}%")


if __name__ == "__main__":
    main(sys.argv[1:])
