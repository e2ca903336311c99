"""What a memory is about, read from its words: the slot two memories must share to conflict, and the facts
two memories must share to be duplicates.

A slot is (subject, activity). The subject is whom it concerns: the person and the companion ("") or
another person named by kinship or a possessive ("妹妹", "小鱼"). The activity is what remains of the
words once the subject, the situation ("有家人在时"), every expression of time ("每周三晚上", "十点") and
function words are taken out: "每周日早上陪她晨跑" is about 晨跑, "周六下午陪她去看电影" about 看电影, so
they are two slots and coexist; "语音改到每周四晚上" and "每周三晚上语音" are both about 语音 and only
their times differ. Facts are what makes two similar sentences two memories: numbers, dates and times,
people and names ("她妹妹的生日是12月6日" is not "她的生日是12月4日").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import rjieba

from .segment import words

# When something happens or recurs: never part of what it is.
WHEN = re.compile(
    r"(?:每|这|下|上|本)?(?:个)?(?:周|星期|礼拜)[一二三四五六日天末]?|每(?:天|晚|早|月|年)|每个月|"
    r"(?:今|明|后|昨|前)天|(?:今|明|去|前)年|"
    r"\d{1,4}\s*[年月日号]|[一二三四五六七八九十]{1,3}\s*[月号]|"
    r"\d{1,2}\s*[点:：]\s*(?:\d{1,2}|半)?分?|[零一二两三四五六七八九十]{1,3}点(?:半|\d{1,2}分)?|"
    r"凌晨|早上|早晨|上午|中午|下午|傍晚|晚上|半夜|夜里|白天|周末|平时|以后|之后|从今以后|从此|每次|有时"
)
# Kinship and social roles: a memory about one of them is not a memory about the person.
PEOPLE = re.compile(
    r"妈妈|爸爸|母亲|父亲|爸妈|父母|老公|老婆|丈夫|妻子|孩子|儿子|女儿|哥哥|姐姐|弟弟|妹妹|爷爷|奶奶|外婆|外公|"
    r"姥姥|姥爷|舅舅|阿姨|叔叔|姑姑|表姐|表妹|表哥|表弟|堂姐|堂妹|堂哥|堂弟|闺蜜|室友|同事|老板|上司|老师|"
    r"同学|男朋友|女朋友|对象|前任|朋友|家人|我妈|我爸|她妈|她爸|他妈|他爸"
)
_PRONOUN = {"我", "你", "她", "他", "它", "我们", "咱们", "你们", "她们", "他们", "自己", "人家"}
_POSSESSOR = re.compile(r"^(?:我|你|她|他)?(?:的)?([\u4e00-\u9fff]{1,4}?)的")
# Words that say how, not what: they never make two memories about the same thing.
_FUNCTION = set(
    "的 了 吧 呢 啊 呀 哦 嘛 吗 是 在 有 要 会 就 都 也 还 再 又 才 去 来 到 成 为 把 被 给 跟 和 与 及 让 "
    "改 换 用 不 别 没 没有 不要 不再 不用 还是 还要 另外 顺便 同时 一起 一下 陪 帮 替 前 后 时 候 时候 "
    "以后 之后 从此 可以 一定 一直 记得 提醒 答应 保证 约好 说好 约定 咱们 我们 改成 改到 改为 换成 换到 改用".split()
)
_NUMBER = re.compile(r"\d+(?:\.\d+)?|[零一二两三四五六七八九十百千万]+(?=[点号月日岁个块元次年天周])")
_NAME_TAGS = {"nr", "nrt", "nrfg", "ns", "nz"}
_CALLED = re.compile(r"叫(?:做|作)?(?:我|你|她|他)?([\u4e00-\u9fffA-Za-z]{1,4}?)(?:[，。,.!！?？；;\s]|了|吧|啊|呀|$)")
# Characters that carry no activity, for the character view of one (below).
_FUNCTION_CHARS = set(
    "的了吧呢啊呀哦嘛吗是在有要会就都也还再又才去来到成为把被给跟和与及让改换用不别没陪帮替前后时候"
    "我你她他它们咱一起下个"
)
_CJK = re.compile(r"[\u4e00-\u9fff]")
# Two activities are one when the smaller one's words are half in the other, or, since the segmenter splits
# words it does not know ("微信" → "用微"/"信发"), when its content characters are three quarters in it.
SAME_WORDS, SAME_CHARS = 0.5, 0.75


@dataclass(frozen=True)
class Slot:
    subject: str
    activity: frozenset[str]  # words
    chars: frozenset[str]  # the same, as content characters

    def same_as(self, other: "Slot") -> bool:
        return self.subject == other.subject and (
            _share(self.activity, other.activity) >= SAME_WORDS or _share(self.chars, other.chars) >= SAME_CHARS
        )


def _share(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / min(len(a), len(b)) if a and b else 0.0


def subject_of(text: str) -> str:
    """Whom a memory concerns: "" for the person (and the companion), else the other person."""
    found = PEOPLE.search(text)
    if found:
        return re.sub(r"^[我她他]", "", found.group(0)) or found.group(0)
    possessor = _POSSESSOR.search(text.strip())
    if possessor and possessor.group(1) not in _PRONOUN and not WHEN.fullmatch(possessor.group(1)):
        return possessor.group(1)
    return ""


# A change said thing-first ("吃早饭的提醒改成早上七点半", "语音换到周四", "吃药以后改九点"): the slot is the
# thing changed, never "吃早饭" read as the owner of "的提醒".
_CHANGED = re.compile(
    r"^\s*(?P<thing>.{1,12}?)(?:的)?(?:提醒|时间|闹钟|安排|日子|时候)?"
    r"(?:以后|从今以后|之后|从明天起|从下周起)?"
    r"(?:都|就)?(?:改成|改到|改为|改在|改|换成|换到|换在|挪到|调到|提前到|推迟到|延后到)"
)


def slot_of(text: str, situation: str = "") -> Slot:
    """The slot of a memory's content; `situation` (its written or detected situation) is left out."""
    rest = text.replace(situation, " ") if situation else text
    changed = _CHANGED.match(rest)
    if changed and slot_of(changed.group("thing")).chars:
        rest = changed.group("thing")
    subject = subject_of(rest)
    rest = WHEN.sub(" ", rest)
    if subject:
        rest = rest.replace(subject, " ")
    activity = frozenset(w for w in words(rest) if w not in _FUNCTION and w not in _PRONOUN and not w.isdigit())
    # the characters of what is left once function words are out ("提醒" is no part of what is reminded of)
    content = "".join(w for w in words(rest) if w not in _FUNCTION)
    return Slot(subject, activity, frozenset(c for c in _CJK.findall(content) if c not in _FUNCTION_CHARS))


def when_of(text: str) -> set[str]:
    """The expressions of time a memory states, as written (spaces dropped)."""
    return {re.sub(r"\s", "", m.group(0)) for m in WHEN.finditer(text)} - {"以后", "之后", "从今以后", "从此"}


def facts(text: str) -> frozenset[str]:
    """Numbers, times, people and names in a text: two memories that differ in one are two memories."""
    found = {m.group(0) for m in _NUMBER.finditer(text)} | when_of(text)
    found |= {m.group(0) for m in PEOPLE.finditer(text)}
    found |= {w for w, tag in rjieba.tag(text) if tag in _NAME_TAGS}
    found |= {m.group(1) for m in _CALLED.finditer(text)}
    return frozenset(found)
