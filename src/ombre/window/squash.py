"""Squashing: long tool payloads cut to a cap (head and tail kept), images replaced by a placeholder.

Pure functions over one parsed transcript line. Dialogue text and thinking are never touched:
what gets squashed is tool output, tool input and image/document base64.
"""

from __future__ import annotations

from dataclasses import dataclass

# Chinese, because the agent reads these markers inside its own context.
TEXT_MARK = "\n…[ombre 已省略 {cut:,} 字符，原长 {total:,} 字符]…\n"
IMAGE_MARK = "[ombre 已省略{what}：{mime}，base64 约 {kb:,} KB]"

_BASE64_KEYS = ("base64", "data")


@dataclass(slots=True)
class SquashStats:
    payloads: int = 0  # tool_result / tool_use / toolUseResult strings cut
    images: int = 0  # image or document blocks replaced
    chars_removed: int = 0
    thinking_dropped: int = 0

    def add(self, other: "SquashStats") -> None:
        self.payloads += other.payloads
        self.images += other.images
        self.chars_removed += other.chars_removed
        self.thinking_dropped += other.thinking_dropped

    @property
    def changed(self) -> bool:
        return bool(self.payloads or self.images or self.thinking_dropped)


def squash_text(text: str, cap: int) -> str | None:
    """`text` cut to about `cap` characters, head and tail kept; None when it already fits."""
    if len(text) <= cap:
        return None
    head = max(cap * 2 // 3, 1)
    tail = max(cap - head, 0)
    cut = len(text) - head - tail
    return text[:head] + TEXT_MARK.format(cut=cut, total=len(text)) + (text[-tail:] if tail else "")


def image_placeholder(block: dict) -> dict:
    raw_source = block.get("source")
    source = raw_source if isinstance(raw_source, dict) else {}
    raw_data = source.get("data")
    data = raw_data if isinstance(raw_data, str) else ""
    mime = source.get("media_type") or source.get("type") or "unknown"
    what = "图片" if block.get("type") == "image" else "文件"
    return {"type": "text", "text": IMAGE_MARK.format(what=what, mime=mime, kb=round(len(data) * 3 / 4 / 1024))}


def _is_binary_block(block: object) -> bool:
    return (
        isinstance(block, dict)
        and block.get("type") in ("image", "document")
        and isinstance(block.get("source"), dict)
        and block["source"].get("type") == "base64"
    )


def _squash_value(value: object, cap: int, stats: SquashStats) -> object:
    """Strings longer than `cap` anywhere inside `value` cut down; returns the (possibly new) value."""
    if isinstance(value, str):
        short = squash_text(value, cap)
        if short is None:
            return value
        stats.payloads += 1
        stats.chars_removed += len(value) - len(short)
        return short
    if isinstance(value, list):
        for i, item in enumerate(value):
            value[i] = _squash_value(item, cap, stats)
        return value
    if isinstance(value, dict):
        for key, item in value.items():
            if key in _BASE64_KEYS and isinstance(item, str) and len(item) > cap:
                stats.images += 1
                stats.chars_removed += len(item)
                value[key] = IMAGE_MARK.format(
                    what="二进制",
                    mime=value.get("media_type") or value.get("type") or "unknown",
                    kb=round(len(item) * 3 / 4 / 1024),
                )
            else:
                value[key] = _squash_value(item, cap, stats)
        return value
    return value


def _squash_tool_result_content(content: object, cap: int, stats: SquashStats) -> object:
    if isinstance(content, str):
        return _squash_value(content, cap, stats)
    if isinstance(content, list):
        out = []
        for block in content:
            if _is_binary_block(block):
                stats.images += 1
                stats.chars_removed += len(block["source"].get("data") or "")
                out.append(image_placeholder(block))
            elif isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
                block["text"] = _squash_value(block["text"], cap, stats)
                out.append(block)
            else:
                out.append(block)
        return out
    return content


def squash_line(obj: dict, cap: int) -> SquashStats:
    """Squash one parsed user/assistant line in place and say what was cut.

    A thinking block is only valid with the content before it unchanged, so once a
    block of an assistant line changes, the thinking blocks after it in that line are dropped.
    """
    stats = SquashStats()
    message = obj.get("message")
    if not isinstance(message, dict):
        return stats
    content = message.get("content")
    if isinstance(content, list):
        new_content: list = []
        changed_before = False
        for block in content:
            before = stats.payloads + stats.images
            if not isinstance(block, dict):
                new_content.append(block)
                continue
            kind = block.get("type")
            if kind in ("thinking", "redacted_thinking") and changed_before:
                stats.thinking_dropped += 1
                continue
            if _is_binary_block(block):
                stats.images += 1
                stats.chars_removed += len(block["source"].get("data") or "")
                block = image_placeholder(block)
            elif kind == "tool_result":
                block["content"] = _squash_tool_result_content(block.get("content"), cap, stats)
            elif kind == "tool_use" and "input" in block:
                block["input"] = _squash_value(block["input"], cap, stats)
            new_content.append(block)
            if stats.payloads + stats.images != before:
                changed_before = True
        message["content"] = new_content
    if "toolUseResult" in obj:
        obj["toolUseResult"] = _squash_value(obj["toolUseResult"], cap, stats)
    return stats
