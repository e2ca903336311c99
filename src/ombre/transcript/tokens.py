"""Token estimates and the context-% reading.

Claude's tokenizer is not public, so sizes are estimated and calibrated against the `usage` that Claude Code
stores on assistant lines (see `bench/calibrate_tokens.py` and the README for the measured error).
"""
from __future__ import annotations

import json
import math

# Calibrated on the fixture transcripts (bench/calibrate_tokens.py); CJK from DESIGN §5 (1-1.5 per character).
ASCII_CHARS_PER_TOKEN = 3.8
WIDE_TOKENS_PER_CHAR = 1.3
IMAGE_TOKENS = 2_000
BLOCK_OVERHEAD = 4  # role/type framing the API adds around each content block

WINDOW_DEFAULT = 200_000
WINDOW_1M = 1_000_000


def estimate_text(text: str) -> int:
    """Estimated tokens of a piece of text: ASCII by length, wide (CJK) characters one by one."""
    n = len(text)
    if n == 0:
        return 0
    if text.isascii():
        return math.ceil(n / ASCII_CHARS_PER_TOKEN)
    # UTF-8 length tells how many characters are wide without a Python-level loop over a long string:
    # ASCII takes 1 byte, CJK 3; two- and four-byte characters land close enough for an estimate.
    extra = len(text.encode("utf-8", "surrogatepass")) - n
    wide = min(n, extra // 2)
    return math.ceil((n - wide) / ASCII_CHARS_PER_TOKEN + wide * WIDE_TOKENS_PER_CHAR)


def estimate_block(block: object) -> int:
    if isinstance(block, str):
        return estimate_text(block)
    if not isinstance(block, dict):
        return 0
    kind = block.get("type")
    if kind == "text":
        return BLOCK_OVERHEAD + estimate_text(str(block.get("text", "")))
    if kind == "thinking":
        return BLOCK_OVERHEAD + estimate_text(str(block.get("thinking", "")))
    if kind == "redacted_thinking":
        return BLOCK_OVERHEAD + estimate_text(str(block.get("data", ""))) // 4
    if kind in ("image", "document"):
        return IMAGE_TOKENS
    if kind == "tool_use":
        payload = json.dumps(block.get("input", {}), ensure_ascii=False, separators=(",", ":"))
        return BLOCK_OVERHEAD + estimate_text(str(block.get("name", ""))) + estimate_text(payload)
    if kind == "tool_result":
        return BLOCK_OVERHEAD + estimate_content(block.get("content", ""))
    # Unknown block kinds still cost something: count their JSON.
    return BLOCK_OVERHEAD + estimate_text(json.dumps(block, ensure_ascii=False))


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
    total = 0
    seen = False
    for key in USAGE_KEYS:
        value = usage.get(key)
        if isinstance(value, (int, float)):
            total += int(value)
            seen = True
    return total if seen else None


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
