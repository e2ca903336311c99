"""commitment_arbitrate (seed §8.2, §8.4): before a commitment, agreement, rule or importance ≥ 8 memory is
held, compare it with the top related ones and decide: add, skip, overwrite, merge, coexist, contradiction.

The rules backend handles the common Chinese phrasings with no model at all: 改成 / 以后都 / 还是用 /
不…了 (a change: overwrite), 有X在时 / 在家时 (a situation: coexist), 另外 / 还要 (merge), the same words
again (skip), and the same topic at another time or day without a change word (contradiction). A model
backend (write/llm.py) decides the hard ones; when it fails or is late, hold writes the memory as 未确认.
"""
from __future__ import annotations

import re
from typing import Callable

from ..memory.arbitration import ACTIONS, NEEDS_TARGET, Verdict, compared_text, related
from ..memory.model import Memory
from ..memory.segment import bigrams, words
from ..memory.service import MemoryService
from ..settings import Settings
from .llm import JsonModel, ModelError, from_settings

CHANGE = re.compile(r"改成|改到|改为|改在|改用|换成|换到|以后都|以后也|之后都|之后也|从今以后|从此|还是用|"
                    r"还是.{0,6}吧|不再|不.{1,6}了|取消|算了")
MERGE = re.compile(r"另外|还要|再加|也要|顺便|同时")
SITUATION = re.compile(r"有[^，。,；;]{1,8}?在(?:场)?(?:的)?时(?:候)?|当着[^，。,；;]{1,8}?(?:的)?面|"
                       r"在(?:家|公司|外面|学校|单位|[^，。,；;\s]{1,6}?)(?:里)?(?:的)?时(?:候)?|"
                       r"[^，。,；;\s]{1,8}?的时候")
# When something happens: two memories on one topic with different slots exclude each other.
SLOT = re.compile(r"周[一二三四五六日天末]|星期[一二三四五六日天]|礼拜[一二三四五六日天]|\d{1,2}\s*[点:：]\d{0,2}|"
                  r"[零一二两三四五六七八九十]{1,3}点(?:半)?|\d{1,2}号|早上|上午|中午|下午|晚上|半夜|每天|每周")
# Words that say when, not what: they do not make two memories about the same thing.
_WHEN = set("周一 周二 周三 周四 周五 周六 周日 周天 周末 每周 每天 晚上 早上 上午 中午 下午 以后 之后 这周 "
            "下周 今天 明天 改成 改到 还是".split())
RELATED_SIMILARITY = 0.88  # close enough to be the same topic without sharing a word

SYSTEM = ("你是陪伴型助手的记忆仲裁员。给你一条新记忆和几条旧记忆，判断新记忆该怎么处理，只输出一个 JSON 对象："
          '{"action": "add|skip|overwrite|merge|coexist|contradiction", "target": "旧记忆 id 或 null", '
          '"situation": "并存时新记忆的情境", "old_situation": "并存时旧记忆的情境", "merged": "合并后的内容", '
          '"reason": "一句话理由"}。overwrite=对方改口，旧的不再有效；merge=补充同一件事；coexist=不同情境各自成立；'
          "contradiction=互相排斥又没有改口；skip=已经记过；add=无关的新事。不要编造对方没说过的话。")


def _topic_terms(text: str) -> set[str]:
    return {w for w in words(text) if len(w) >= 2 and w not in _WHEN} | \
           {g for g in bigrams(text) if g not in _WHEN and not SLOT.fullmatch(g)}


def _slots(text: str) -> set[str]:
    return {re.sub(r"\s", "", s) for s in SLOT.findall(text)} - {"每天", "每周"}


def situation_of(text: str) -> str:
    found = SITUATION.search(text)
    return found.group(0) if found else ""


def rules_verdict(new: Memory, candidates: list[tuple[Memory, float]]) -> Verdict:
    text = compared_text(new)
    terms = _topic_terms(text)
    same_topic = [(m, sim) for m, sim in candidates
                  if sim >= RELATED_SIMILARITY or terms & _topic_terms(m.content)]
    if not same_topic:
        return Verdict("add", reason="没有相关的旧承诺或规则")
    old, _ = same_topic[0]
    if re.sub(r"\W", "", old.content) == re.sub(r"\W", "", new.content):
        return Verdict("skip", old.id, reason="同样的内容已经记过")
    new_situation, old_situation = situation_of(text), old.situation or situation_of(old.content)
    if new_situation and new_situation != old_situation:
        return Verdict("coexist", old.id, situation=new_situation, old_situation=old_situation,
                       reason=f"不同情境：{new_situation} / {old_situation or '其他情境'}")
    if CHANGE.search(text):
        return Verdict("overwrite", old.id, reason="对方改口，新的取代旧的")
    if MERGE.search(text):
        return Verdict("merge", old.id, merged=f"{old.content}；{new.content}", reason="同一件事的补充")
    old_slots, new_slots = _slots(old.content), _slots(text)
    if old_slots and new_slots and old_slots != new_slots:
        return Verdict("contradiction", old.id, reason=f"同一件事两个说法（{'、'.join(sorted(old_slots))} / "
                                                       f"{'、'.join(sorted(new_slots))}），又没有改口")
    return Verdict("add", reason="相关但不冲突")


def model_verdict(model: JsonModel, new: Memory, candidates: list[tuple[Memory, float]]) -> Verdict:
    lines = [f"新记忆（类型 {new.type}）：{new.content}", f"对方原话：{new.evidence.quote or '（无）'}", "旧记忆："]
    lines += [f"- id={m.id} 类型={m.type} 情境={m.situation or '无'}：{m.content}" for m, _ in candidates] or ["（无）"]
    answer = model.ask(SYSTEM, "\n".join(lines))
    action = answer.get("action")
    if action not in ACTIONS:
        raise ModelError(f"unknown action {action!r}")
    target = answer.get("target")
    ids = {m.id for m, _ in candidates}
    if action in NEEDS_TARGET and target not in ids:
        raise ModelError(f"{action} needs one of the given ids, got {target!r}")
    text = lambda key: str(answer.get(key) or "")[:200]  # noqa: E731
    return Verdict(action, target if action in NEEDS_TARGET else None, situation=text("situation"),
                   old_situation=text("old_situation"), merged=text("merged"), reason=text("reason"),
                   by=model.name)


def arbiter(settings: Settings, service: MemoryService) -> Callable[[Memory], Verdict]:
    """What hold calls for a memory that needs arbitration: rules, or the configured model."""
    model = from_settings(settings)

    def decide(new: Memory) -> Verdict:
        candidates = related(service.store, service.encoders, new)
        if model is None:
            return rules_verdict(new, candidates)
        return model_verdict(model, new, candidates)

    return decide


def open_service(settings: Settings, **kwargs: object) -> MemoryService:
    """The memory service as every adapter (CLI, HTTP, MCP) uses it: with commitment arbitration."""
    service = MemoryService(settings, **kwargs)
    service.arbitrate = arbiter(settings, service)
    return service
