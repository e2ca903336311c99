"""Token estimates and the context-% reading.

Claude's tokenizer is not public, so sizes are estimated and calibrated against the `usage` that Claude Code
stores on assistant lines (see `bench/calibrate_tokens.py` and the README for the measured error).
"""

from __future__ import annotations

import math

# ASCII density and block framing fitted on the stored usage of the fixture transcripts
# (bench/calibrate_tokens.py; they are code-heavy, prose runs a little lighter, so we err towards
# over-counting, the safe side for a window budget). CJK at 1–1.5 tokens a character.
ASCII_CHARS_PER_TOKEN = 3.0
WIDE_TOKENS_PER_CHAR = 1.3
IMAGE_TOKENS = 2_000
BLOCK_OVERHEAD = 16  # role/type framing, tool names and ids around each content block

WINDOW_DEFAULT = 200_000
WINDOW_1M = 1_000_000


def estimate_text(text: str) -> int:
    """Estimated tokens of a piece of text: ASCII by length, wide (CJK) characters one by one."""
    n = len(text)
    if n == 0:
        return 0
    if text.isascii():
        return int(n / ASCII_CHARS_PER_TOKEN) + 1
    # UTF-8 length tells how many characters are wide without a Python-level loop over a long string:
    # ASCII takes 1 byte, CJK 3; two- and four-byte characters land close enough for an estimate.
    extra = len(text.encode("utf-8", "surrogatepass")) - n
    wide = min(n, extra // 2)
    return int((n - wide) / ASCII_CHARS_PER_TOKEN + wide * WIDE_TOKENS_PER_CHAR) + 1


def estimate_json(value: object) -> int:
    """Estimated tokens of a JSON value (tool input, attachment) without serializing it."""
    if isinstance(value, str):
        return estimate_text(value) + 1
    if isinstance(value, dict):
        return 1 + sum(estimate_text(k) + estimate_json(v) for k, v in value.items())
    if isinstance(value, list):
        return 1 + sum(estimate_json(v) for v in value)
    return 1


def estimate_block(block: object) -> int:
    if isinstance(block, str):
        return estimate_text(block)
    if not isinstance(block, dict):
        return 0
    kind = block.get("type")
    if kind == "text":
        text = block.get("text")
        return BLOCK_OVERHEAD + (estimate_text(text) if isinstance(text, str) else 0)
    if kind == "tool_result":
        return BLOCK_OVERHEAD + estimate_content(block.get("content", ""))
    if kind == "tool_use":
        return BLOCK_OVERHEAD + estimate_text(str(block.get("name", ""))) + estimate_json(block.get("input"))
    if kind == "thinking":
        text = block.get("thinking")
        return BLOCK_OVERHEAD + (estimate_text(text) if isinstance(text, str) else 0)
    if kind in ("image", "document"):
        return IMAGE_TOKENS
    if kind == "redacted_thinking":
        return BLOCK_OVERHEAD + len(str(block.get("data", ""))) // 16
    # Unknown block kinds still cost something: count their JSON.
    return BLOCK_OVERHEAD + estimate_json(block)


def estimate_content(content: object) -> int:
    """Estimated tokens of a message's `content` (a string or a list of blocks)."""
    if isinstance(content, str):
        return estimate_text(content)
    if isinstance(content, list):
        return sum(estimate_block(b) for b in content)
    return 0


USAGE_KEYS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")


def usage_context(usage: dict | None) -> int | None:
    """Context size Claude Code reads from an assistant line's `usage`.

    Claude Code 2.1.112 counts input + cache creation + cache read + output of the last real assistant
    reply (its output is part of the next request), then estimates whatever came after it.
    """
    if not isinstance(usage, dict):
        return None
    values = [
        v
        for v in (usage.get(k) for k in USAGE_KEYS)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
    ]
    return int(sum(values)) if values else None


def window_for(model: str | None, used: int | None = None, default: int = WINDOW_DEFAULT) -> int:
    """The context window: 1M for `[1m]` models or when usage already shows more than 200k."""
    if model and "[1m]" in model.lower():
        return WINDOW_1M
    if used is not None and used > default:
        return WINDOW_1M
    return default


def context_pct(used: int | None, window: int) -> float | None:
    if used is None or window <= 0:
        return None
    return round(100.0 * used / window, 1)
