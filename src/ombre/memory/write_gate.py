"""write_gate: a decision, with reasons, for every candidate memory.

Not a censor of style: it stops the high-risk write patterns. Manual holds pass with warnings (the person
asked for it); automatic ones are held to the rules. Every decision is logged by the caller.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .model import Memory
from .segment import terms
from .slot import facts

STORE, STORE_UNCONFIRMED, LOG_ONLY, REFUSE = "store", "store_unconfirmed", "log_only", "refuse"
QUOTA_DECISIONS = (STORE, STORE_UNCONFIRMED)  # automatic writes these decisions let through count against the quota
UNCONFIRMED_IMPORTANCE = 4  # an unverified fact may be kept, but never ranked like a confirmed one

# Red-line subjects: facts about family, body, work, dates are never stored as confirmed
# without the person's own words.
RED_LINE = {
    "日期": re.compile(
        r"\d{1,2}\s*月\s*\d{1,2}\s*[日号]|\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|"
        r"(周|星期|礼拜)[一二三四五六日天]|生日|纪念日"
    ),
    "身体": re.compile(
        r"病|发烧|感冒|咳嗽|疼|痛|医院|医生|复诊|吃药|药物|过敏|手术|"
        r"失眠|抑郁|焦虑症|怀孕|体检|身体|体重"
    ),
    "家庭": re.compile(
        r"妈妈|爸爸|母亲|父亲|爸妈|父母|老公|老婆|丈夫|妻子|孩子|儿子|女儿|"
        r"哥哥|姐姐|弟弟|妹妹|爷爷|奶奶|外婆|外公|家人|亲戚"
    ),
    "工作": re.compile(r"工作|公司|老板|上司|同事|上班|辞职|离职|加班|工资|面试|升职|裁员"),
    "他人": re.compile(r"(他|她)叫|名字是|朋友|闺蜜|室友|前任|男朋友|女朋友|对象"),
}
_PERMANENT = re.compile(r"总是|从来|一直都|永远|天生|性格|本性|就是个|本来就是|这种人")
_MOOD = re.compile(r"难过|伤心|生气|烦|累|焦虑|崩溃|不开心|开心|郁闷|丧|委屈|emo", re.I)
_CHANGE = re.compile(r"不再|改成|改为|改用|取消|不用了|别再|以后不|不要再|换成")
DUPLICATE_OVERLAP = 0.8
# The person is 我 in their own words (what distillation keeps) and 她/他 in the companion's (what it holds
# through MCP): one subject, so "我对芒果过敏" is a duplicate of "她对芒果过敏". Someone else is named
# (我妈, 她朋友), and facts() tells them apart.
_THE_PERSON = re.compile(r"[我她他](?!们)")


@dataclass
class GateDecision:
    decision: str
    reasons: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    importance: int = 5

    @property
    def stores(self) -> bool:
        return self.decision in (STORE, STORE_UNCONFIRMED)


def red_line_subjects(text: str) -> list[str]:
    return [name for name, pattern in RED_LINE.items() if pattern.search(text)]


def _overlap(a: list[str], b: list[str]) -> float:
    sa, sb = set(a), set(b)
    return len(sa & sb) / max(1, min(len(sa), len(sb))) if sa and sb else 0.0


def judge(
    candidate: Memory, *, source: str, auto_today: int, auto_daily: int, pinned: list[Memory], similar: list[Memory]
) -> GateDecision:
    """Decide for one candidate. `auto_today` is today's count of stored automatic writes; `pinned` the
    pinned memories; `similar` existing memories that share its keywords."""
    auto = source != "manual"
    d = GateDecision(STORE, importance=candidate.importance)
    text = candidate.content
    quote = candidate.evidence.quote

    def flag(reason: str, auto_decision: str) -> None:
        if auto:
            d.reasons.append(reason)
            if _rank(auto_decision) > _rank(d.decision):
                d.decision = auto_decision
        else:
            d.warnings.append(reason)

    if auto and auto_today >= auto_daily:
        flag(f"今日自动写入已达上限（{auto_daily} 条）", REFUSE)
    new_terms = terms(text)
    for old in pinned:
        if _CHANGE.search(text) and _overlap(new_terms, terms(old.content)) >= 0.3:
            flag(f"与置顶红线 {old.id}「{old.content[:30]}」冲突，不能静默覆盖", REFUSE)
            break
    if _PERMANENT.search(text) and _MOOD.search(text):
        flag("一次性情绪不能写成永久性格判断", LOG_ONLY)
    said = terms(_THE_PERSON.sub("", text))
    for old in similar:
        # close words are not enough: another date, number, name or person is another memory
        if _overlap(said, terms(_THE_PERSON.sub("", old.content))) >= DUPLICATE_OVERLAP and facts(text) == facts(
            old.content
        ):
            flag(f"低意外：与已有记忆 {old.id} 几乎相同", LOG_ONLY)
            break
    subjects = red_line_subjects(text)
    if subjects and not quote:
        reason = f"涉及{'、'.join(subjects)}却没有原话：只能记为未确认"
        if d.decision == STORE:
            d.decision = STORE_UNCONFIRMED
        (d.reasons if auto else d.warnings).append(reason)
        if auto:
            d.importance = min(d.importance, UNCONFIRMED_IMPORTANCE)
    if not quote and d.decision == STORE:
        d.decision = STORE_UNCONFIRMED
        d.reasons.append("没有原话：记为未确认")
    if not d.reasons and d.decision == STORE:
        d.reasons.append("有原话，无风险模式")
    return d


def _rank(decision: str) -> int:
    return {STORE: 0, STORE_UNCONFIRMED: 1, LOG_ONLY: 2, REFUSE: 3}[decision]
