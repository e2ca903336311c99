"""commitment_arbitrate: before a commitment, agreement, rule or importance ≥ 8 memory is
held, compare it with the top related ones and decide: add, skip, overwrite, merge, coexist, contradiction.

The rules backend needs no model. Two memories are weighed against each other only when they fill the same
slot (memory/slot.py: the same subject and the same activity; "陪她晨跑" and "陪她看电影" are two slots and
both simply stand). Within one slot: the same words again are skipped, another situation (有X在时 / 在家时)
coexists, a change word (改成 / 以后都 / 还是用 / 不…了) overwrites, an addition (另外 / 还要) merges, and
another time on the same days with no change word is a contradiction; another day is another occasion and
stands beside it. A model backend (write/llm.py) decides instead when one is configured; when it fails or
is late, hold writes the memory as 未确认.
"""

from __future__ import annotations

import re
from typing import Callable

from ..memory.arbitration import ACTIONS, NEEDS_TARGET, Verdict, compared_text, related
from ..memory.model import Memory
from ..memory.service import MemoryService
from ..memory.slot import Slot, slot_of, when_of
from ..settings import Settings
from .llm import JsonModel, ModelError, OverBudget, from_settings

CHANGE = re.compile(
    r"改成|改到|改为|改在|改用|换成|换到|以后都|以后也|之后都|之后也|从今以后|从此|还是用|"
    r"还是.{0,6}吧|不再|不.{1,6}了|取消|算了"
)
MERGE = re.compile(r"另外|还要|再加|也要|顺便|同时")
SITUATION = re.compile(
    r"有[^，。,；;]{1,8}?在(?:场)?(?:的)?时(?:候)?|当着[^，。,；;]{1,8}?(?:的)?面|"
    r"在(?:家|公司|外面|学校|单位|[^，。,；;\s]{1,6}?)(?:里)?(?:的)?时(?:候)?|"
    r"[^，。,；;\s]{1,8}?的时候"
)
# Which days a time names, as one spelling: 每周三 = 周三 = 星期三 = 礼拜三.
_DAY = re.compile(r"(?:周|星期|礼拜)([一二三四五六日天末])|(每天|每晚|每早|天天)|(\d{1,2}\s*[号日]|[今明后]天)")

SYSTEM = (
    "你是陪伴型助手的记忆仲裁员。给你一条新记忆和几条旧记忆，判断新记忆该怎么处理，只输出一个 JSON 对象："
    '{"action": "add|skip|overwrite|merge|coexist|contradiction", "target": "旧记忆 id 或 null", '
    '"situation": "并存时新记忆的情境", "old_situation": "并存时旧记忆的情境", "merged": "合并后的内容", '
    '"reason": "一句话理由"}。overwrite=对方改口，旧的不再有效；merge=补充同一件事；coexist=不同情境各自成立；'
    "contradiction=互相排斥又没有改口；skip=已经记过；add=无关的新事。不要编造对方没说过的话。"
)


def situation_of(text: str) -> str:
    found = SITUATION.search(text)
    return found.group(0) if found else ""


def _days(text: str) -> set[str]:
    out = set()
    for weekday, daily, date in _DAY.findall(text):
        out.add("周" + weekday.replace("天", "日") if weekday else "每天" if daily else re.sub(r"\s|日", "号", date))
    return out


def _clock(text: str) -> set[str]:
    return {w for w in when_of(text) if not _DAY.fullmatch(w) and not re.fullmatch(r"每?(?:周|星期|礼拜).?", w)}


def slot_of_memory(m: Memory) -> Slot:
    """A memory's slot from its content (its quote only when the content names no activity)."""
    situation = m.situation or situation_of(m.content)
    slot = slot_of(m.content, situation)
    if not slot.activity and m.evidence.quote:
        slot = slot_of(compared_text(m), situation or situation_of(m.evidence.quote))
    return slot


def _describe(slot: Slot) -> str:
    what = "、".join(sorted(slot.activity)) or "（说不清）"
    return f"{slot.subject}·{what}" if slot.subject else what


def rules_verdict(new: Memory, candidates: list[tuple[Memory, float]]) -> Verdict:
    text = compared_text(new)
    said = re.sub(r"\W", "", new.content)
    for old, _ in candidates:
        if re.sub(r"\W", "", old.content) == said:
            return Verdict("skip", old.id, reason="同样的内容已经记过")
    slot = slot_of_memory(new)
    same = [old for old, _ in candidates if slot.same_as(slot_of_memory(old))]
    if not same:
        # "另外每周日还要一起散步": an addition to what is already agreed for that very time
        occasion = when_of(new.content)
        joined = next((old for old, _ in candidates if occasion and when_of(old.content) == occasion), None)
        if joined is not None and MERGE.search(text):
            return Verdict(
                "merge",
                joined.id,
                merged=f"{joined.content}；{new.content}",
                reason=f"同一时间（{'、'.join(sorted(occasion))}）的补充",
            )
        return Verdict("add", reason=f"没有同一件事的旧承诺或规则（这件是：{_describe(slot)}）")
    old = same[0]
    what = _describe(slot)
    new_situation, old_situation = situation_of(text), old.situation or situation_of(old.content)
    if new_situation and new_situation != old_situation:
        return Verdict(
            "coexist",
            old.id,
            situation=new_situation,
            old_situation=old_situation,
            reason=f"同一件事（{what}），不同情境：{new_situation} / {old_situation or '其他情境'}",
        )
    # one memory that quotes the other says the same agreement more fully: a time settled for a request
    # ("说到「每天陪我背单词」，我提议「九点？」，对方定的是：九点半" beside "每天陪我背单词") is no second one
    before = re.sub(r"\W", "", old.content)
    if len(said) >= 4 and said in before:
        return Verdict("skip", old.id, reason=f"同一件事（{what}），旧的那条已经包含它，说得更全")
    if len(before) >= 4 and before in said and not CHANGE.search(text):
        return Verdict("overwrite", old.id, reason=f"同一件事（{what}），新的这条包含旧的，说得更全")
    if CHANGE.search(text):
        return Verdict("overwrite", old.id, reason=f"同一件事（{what}）对方改口，新的取代旧的")
    if MERGE.search(text):
        return Verdict("merge", old.id, merged=f"{old.content}；{new.content}", reason=f"同一件事（{what}）的补充")
    old_days, new_days = _days(old.content), _days(new.content)
    if old_days != new_days:
        return Verdict(
            "add",
            reason=f"同一件事（{what}）在不同的日子（{'、'.join(sorted(old_days)) or '未说'} / "
            f"{'、'.join(sorted(new_days)) or '未说'}），各自成立",
        )
    old_clock, new_clock = _clock(old.content), _clock(new.content)
    if old_clock and new_clock and old_clock != new_clock:
        return Verdict(
            "contradiction",
            old.id,
            reason=f"同一件事（{what}）两个时间（{'、'.join(sorted(old_clock))} / "
            f"{'、'.join(sorted(new_clock))}），又没有改口",
        )
    return Verdict("add", reason=f"同一件事（{what}），说法不冲突")


def model_verdict(model: JsonModel, new: Memory, candidates: list[tuple[Memory, float]]) -> Verdict:
    lines = [f"新记忆（类型 {new.type}）：{new.content}", f"对方原话：{new.evidence.quote or '（无）'}", "旧记忆："]
    lines += [f"- id={m.id} 类型={m.type} 情境={m.situation or '无'}：{m.content}" for m, _ in candidates] or ["（无）"]
    answer = model.ask(SYSTEM, "\n".join(lines), purpose="arbitrate")
    action = answer.get("action")
    if action not in ACTIONS:
        raise ModelError(f"unknown action {action!r}")
    target = answer.get("target")
    ids = {m.id for m, _ in candidates}
    if action in NEEDS_TARGET and target not in ids:
        raise ModelError(f"{action} needs one of the given ids, got {target!r}")

    def text(key: str) -> str:
        return str(answer.get(key) or "")[:200]

    return Verdict(
        action,
        target if action in NEEDS_TARGET else None,
        situation=text("situation"),
        old_situation=text("old_situation"),
        merged=text("merged"),
        reason=text("reason"),
        by=model.name,
    )


def arbiter(settings: Settings, service: MemoryService) -> Callable[[Memory], Verdict]:
    """What hold calls for a memory that needs arbitration: rules, or the configured model."""
    model = from_settings(settings)

    def decide(new: Memory) -> Verdict:
        candidates = related(service.store, service.encoders, new)
        if model is not None:
            try:
                return model_verdict(model, new, candidates)
            except OverBudget:
                pass  # past the day's cap the rules decide; a model that failed leaves the memory 未确认
        return rules_verdict(new, candidates)

    return decide
