"""Emotion bias without another model: keywords shift the valence/arousal the recall leans
towards and add comfort or shared-memory terms to the keyword search."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Bias:
    label: str
    valence: float
    arousal: float
    extra_terms: tuple[str, ...] = field(default_factory=tuple)


_RULES: tuple[tuple[str, tuple[str, ...], float, float, tuple[str, ...]], ...] = (
    (
        "难过",
        ("难过", "伤心", "想哭", "哭了", "委屈", "失落", "心痛", "emo", "不开心"),
        0.2,
        0.4,
        ("安慰", "陪着", "抱抱", "难过", "一起"),
    ),
    ("焦虑", ("焦虑", "紧张", "害怕", "担心", "慌", "睡不着", "压力"), 0.3, 0.7, ("安心", "陪着", "放松", "别怕")),
    ("生气", ("生气", "气死", "烦死", "讨厌", "火大"), 0.2, 0.8, ("安慰", "理解", "陪着")),
    ("疲惫", ("好累", "累死", "累了", "疲惫", "没力气", "加班"), 0.35, 0.2, ("休息", "辛苦", "照顾")),
    (
        "想念",
        ("想你", "想念", "好久不见", "还记得", "记不记得", "那次", "以前"),
        0.7,
        0.4,
        ("一起", "记得", "那次", "回忆"),
    ),
    ("开心", ("开心", "高兴", "太好了", "哈哈", "好耶", "激动"), 0.85, 0.7, ("庆祝", "一起", "开心")),
)


def bias(query: str) -> Bias | None:
    """The first emotion whose keywords the query holds, or None for a neutral query."""
    lowered = query.lower()
    for label, words, valence, arousal, extra in _RULES:
        if any(w in lowered for w in words):
            return Bias(label, valence, arousal, extra)
    return None
