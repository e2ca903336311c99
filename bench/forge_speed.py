"""diet and forge on a generated big transcript, against merely parsing its lines (targets:
≤ 2× parse time; peak memory flat in file size).

    python bench/forge_speed.py [--mb 100] [--keep DIR]

Each measurement runs in a fresh Python process so its peak RSS is its own. The transcript is a long
companion chat: CJK dialogue with thinking, parallel tool calls with long log output, base64 images.
"""
from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.transcript_gen import SessionBuilder, ascii_text, cjk_text, fake_png  # noqa: E402

# The baseline is the faster of the two plain ways to parse every line with the stdlib json module.
PARSE = """
import json, sys, time, resource
best = None
for mode in ("rb", "r"):
    t = time.perf_counter()
    with open(sys.argv[1], mode, **({} if mode == "rb" else {"encoding": "utf-8"})) as f:
        for line in f:
            json.loads(line)
    took = time.perf_counter() - t
    best = took if best is None else min(best, took)
print(json.dumps({"seconds": best, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

OP = """
import json, sys, time, resource
from pathlib import Path
from ombre.window.diet import DietOptions, run as diet
from ombre.window.forge import ForgeOptions, run as forge
from ombre.window.select import Selector
path, mode = Path(sys.argv[1]), sys.argv[2]
t = time.perf_counter()
if mode == "diet":
    r = diet(path, DietOptions())
elif mode == "forge":
    r = forge(path, ForgeOptions(selector=Selector(retain=60_000, max_kept=100_000)))
else:
    r = forge(path, ForgeOptions(selector=Selector(retain=60_000, max_kept=100_000), squash=2_000))
seconds = time.perf_counter() - t
Path(r.new_path).unlink()
print(json.dumps({"seconds": seconds, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "kept": r.events_kept, "bytes_after": r.bytes_after}))
"""

BASELINE = """
import json, sys, resource
import ombre.window.forge, ombre.window.diet
print(json.dumps({"rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def generate_chatty(path: Path, megabytes: int, seed: int = 2) -> None:
    """Many short lines: a long CJK chat with small tool calls (the per-line cost dominates here)."""
    from tests.support.transcript_gen import companion_session

    rng = random.Random(seed)
    target = megabytes * 1024 * 1024
    written = 0
    last_uuid: str | None = None
    with open(path, "w", encoding="utf-8") as f:
        while written < target:
            b = companion_session(rng, turns=200, payload_chars=1_500, days=2)
            if last_uuid:  # continue the same chain: re-parent this batch's first line on the last one
                first = json.loads(b.lines[1])
                first["parentUuid"] = last_uuid
                b.lines[1] = json.dumps(first, ensure_ascii=False, separators=(",", ":"))
            last_uuid = b.last  # the next batch continues from here
            chunk = b.text()
            f.write(chunk)
            written += len(chunk.encode("utf-8"))


def generate(path: Path, megabytes: int, seed: int = 1) -> None:
    """Write a companion session of about `megabytes` MB without holding it in memory: big payloads."""
    rng = random.Random(seed)
    b = SessionBuilder(rng)
    target = megabytes * 1024 * 1024
    written = 0
    with open(path, "w", encoding="utf-8") as f:
        turn = 0
        while written < target:
            if turn % 40 == 39:
                b.advance(9)
            if turn % 7 == 6:
                b.user([{"type": "image", "source": {"type": "base64", "media_type": "image/jpeg",
                                                     "data": fake_png(rng, rng.randint(80_000, 250_000))}},
                        {"type": "text", "text": "给你看看今天拍的：" + cjk_text(rng, 30)}])
            else:
                b.say(cjk_text(rng, rng.randint(8, 80)))
            if turn % 2 == 0:
                calls = [("Bash", {"command": "tail -n 500 app.log", "description": "log"},
                          ascii_text(rng, rng.randint(8_000, 60_000))) for _ in range(rng.randint(1, 3))]
                b.tool_round(calls, thinking=cjk_text(rng, 60))
            b.reply([{"type": "thinking", "thinking": cjk_text(rng, 80), "signature": "c2ln" * 40},
                     {"type": "text", "text": cjk_text(rng, rng.randint(20, 200))}])
            chunk = "\n".join(b.lines) + "\n"
            f.write(chunk)
            written += len(chunk.encode("utf-8"))
            b.lines.clear()
            b.expected_chain.clear()
            turn += 1


def measure(code: str, *args: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=100)
    ap.add_argument("--keep", type=Path, default=None)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    folder = Path(args.keep or tempfile.mkdtemp(prefix="ombre-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    sizes = sorted({max(1, args.mb // 4), args.mb})
    base = measure(BASELINE)["rss_mb"]
    print(f"Python with ombre imported: {base:.0f} MB RSS; times are the best of {args.runs} runs\n")
    print(f"{'shape':<8} {'file':>6} {'lines':>7} {'operation':<15} {'seconds':>8} {'× parse':>8} "
          f"{'peak RSS':>9} {'over import':>11}")
    for shape, make, tag in (("payload", generate, "b"), ("chatty", generate_chatty, "c")):
        for mb in sizes:
            path = folder / f"{tag}{mb:07d}-0000-4000-8000-000000000000.jsonl"
            if not path.exists():
                make(path, mb)
            size = path.stat().st_size / 1024 / 1024
            with open(path, "rb") as f:
                lines = sum(1 for _ in f)
            parse = min((measure(PARSE, str(path)) for _ in range(args.runs)), key=lambda r: r["seconds"])
            print(f"{shape:<8} {size:>4.0f}MB {lines:>7} {'parse only':<15} {parse['seconds']:>8.2f} {1:>8.2f} "
                  f"{parse['rss_mb']:>7.0f}MB {'':>11}")
            for mode in ("diet", "forge", "forge --squash"):
                r = min((measure(OP, str(path), mode.replace(" --", "-")) for _ in range(args.runs)),
                        key=lambda r: r["seconds"])
                print(f"{shape:<8} {size:>4.0f}MB {lines:>7} {mode:<15} {r['seconds']:>8.2f} "
                      f"{r['seconds'] / parse['seconds']:>8.2f} {r['rss_mb']:>7.0f}MB {r['rss_mb'] - base:>9.0f}MB")
    print(f"\nfiles in {folder}" if args.keep else "")


if __name__ == "__main__":
    main()
