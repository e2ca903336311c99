"""The handoff pack: a war-room whiteboard for the next window, built from the transcript
without a model, with fixed fields so two packs can be diffed and a person can edit one before use.

Only what was said is written down: the person's state and red lines are their own quoted sentences;
when nothing matches, the field says 未知 rather than guessing.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..clock import SHANGHAI
from ..memory.segment import STOP, sentences, words
from ..transcript import compaction
from ..transcript.chain import Entry, Transcript, clip, scan
from ..transcript.lines import message_text
from ..window import carry
from ..write.distill_rules import asks, proposes

HEADER = "【会话交接 · ombre handoff】"
RECENT_TURNS = 40  # person turns looked at; older context lives out of window, in memory
# Words that make a sentence about the person's state, a promise or to-do, or a red line.
STATE = re.compile(
    r"累|困|难过|伤心|开心|高兴|生病|发烧|感冒|头疼|头痛|胃疼|焦虑|烦|失眠|压力|委屈|想你|孤单|"
    r"害怕|紧张|哭|饿|疼|不舒服|心情|慌|怕|担心|难受|郁闷|崩溃|心累|低落|丧|emo|孤独|寂寞|无聊|"
    r"兴奋|激动|期待|舒服|放松|生气|气死|烦躁|不安|忐忑|沮丧|失落|委屈|感动|幸福|睡不着|没睡好|"
    r"(?:有点|好|太|特别|超|挺|真)(?:[累困烦慌怕饿冷热晕]|难受|开心|难过|紧张)",
    re.I,
)
PROMISE = re.compile(
    r"答应|约好|约定|说好|说定|一言为定|记得|提醒|别忘|下次|明天|后天|周[一二三四五六日天]|星期|待会|"
    r"等会|要去|打算|计划|一定会|保证|承诺|以后每|每天|每周|每晚|"
    # a change to one of them ("嗯 改成七点半吧"): without it the next window keeps the old time
    r"改成|改到|改为|换成|换到|挪到|推到|推迟|提前到"
)
RED_LINE = re.compile(r"不要|别再|千万别|绝不|讨厌|不喜欢|不许|过敏|受不了|底线|不能")
# Too common to say what a conversation is about.
COMMON = set(
    "我们 你们 他们 她们 自己 今天 明天 昨天 现在 就是 什么 怎么 这个 那个 还是 一下 没有 可以 因为 所以 "
    "然后 但是 觉得 知道 真的 一个 一点 有点 时候 已经 不是 这样 那样 而且 如果 的话 好的 嗯嗯 哈哈 "
    "谢谢 晚安 早安 还有 一起 应该 需要 其实 可能".split()
)


@dataclass
class Said:
    who: str  # 对方 | 我
    text: str
    when: str  # Shanghai MM-DD HH:MM
    from_summary: bool = False  # read out of a compaction summary, not a line the person typed

    @property
    def label(self) -> str:
        return f"{self.who}（摘自压缩摘要，{self.when}）" if self.from_summary else f"{self.who}（{self.when}）"


@dataclass
class HandoffPack:
    source_session: str
    generated: str
    topic: str = "未知"
    state: list[Said] = field(default_factory=list)
    open_items: list[Said] = field(default_factory=list)
    red_lines: list[Said] = field(default_factory=list)
    keywords: list[str] = field(default_factory=list)
    quotes: list[Said] = field(default_factory=list)
    days: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)

    def render(self) -> str:
        def items(rows: list[Said], none: str = "（无）") -> list[str]:
            return [f"- {r.label}：「{r.text}」" for r in rows] or [none]

        lines = [HEADER, f"来源会话：{self.source_session}　生成于：{self.generated}（上海时间）"]
        if self.days:
            lines.append(f"取自：{'、'.join(self.days)}")
        lines += ["", f"当前话题：{self.topic}", "", "对方此刻的状态（只写原话）："]
        lines += items(self.state, "未知（没有原话，不要猜）")
        lines += ["", "未完成的约定与待办："] + items(self.open_items)
        lines += ["", "红线（对方说过的不要 / 不能）："] + items(self.red_lines)
        lines += ["", f"回忆关键词：{'、'.join(self.keywords) if self.keywords else '（无）'}"]
        lines += ["", "最近原话："] + items(self.quotes)
        lines += ["", "接着上面的话题自然往下聊；需要更早的事用 breath 查。不要向对方宣布换了窗口。"]
        return "\n".join(lines)


def preview(text: str, limit: int = 300) -> str:
    """The pack's first lines, whole, within about `limit` characters (never a line cut in the middle)."""
    out: list[str] = []
    size = 0
    for line in text.splitlines():
        if out and size + len(line) + 1 > limit:
            break
        out.append(line)
        size += len(line) + 1
    return "\n".join(out)


def _when(e: Entry) -> str:
    moment = e.when
    return moment.astimezone(SHANGHAI).strftime("%m-%d %H:%M") if moment else "?"


def prepare(path: Path, days: tuple[dt.date, ...] = (), now: dt.datetime | None = None) -> HandoffPack:
    """The pack for the session at `path`, from its last person turns (or those of `days`, Shanghai)."""
    now = now or dt.datetime.now(dt.timezone.utc)
    with scan(Path(path)) as t:
        chosen = [
            e for e in t.events if not days or (e.when is not None and e.when.astimezone(SHANGHAI).date() in days)
        ]
        said = list(_said(t, chosen))
        sid = t.session_id
    person_turns = [i for i, s in enumerate(said) if s.who == "对方"]
    if len(person_turns) > RECENT_TURNS:
        said = said[person_turns[-RECENT_TURNS] :]
    pack = HandoffPack(sid, now.astimezone(SHANGHAI).strftime("%Y-%m-%d %H:%M"), days=[d.isoformat() for d in days])
    person = [s for s in said if s.who == "对方"]
    if not person:
        return pack
    pack.keywords = _keywords(person[-10:])
    last = clip(person[-1].text, 40)
    where = "（摘自压缩摘要）" if person[-1].from_summary else ""
    pack.topic = (
        f"{'、'.join(pack.keywords[:2])}（对方最后说{where}：「{last}」）"
        if pack.keywords
        else f"对方最后说{where}：「{last}」"
    )
    pack.state = _matching(person[-10:], STATE, 2)
    pack.open_items = _matching(said, PROMISE, 5, questions=False)
    pack.red_lines = _matching(person, RED_LINE, 3)
    pack.quotes = [Said(s.who, clip(s.text, 60), s.when, s.from_summary) for s in person[-3:]]
    return pack


def _said(t: Transcript, events: list[Entry]):
    """Who said what, oldest first. After a compaction the person's earlier words are only in its summary
    (read out of it and marked so); a forged window's first line carries the turn's request verbatim."""
    for e in events:
        if carry.is_summary(e):
            text = "\n".join(b.get("text", "") for b in carry.summary_blocks(t, e))
            for quote in compaction.asked(text):
                yield Said("对方", quote, _when(e), from_summary=True)
        if carry.REQUEST in e.carry:
            text = message_text({"message": {"content": carry.request_blocks(t, e)[1:]}}).strip()
            if text:
                yield Said("对方", text, _when(e))
        elif e.real_user or e.type == "assistant":
            for _, text in t.spoken([e]):
                yield Said("对方" if e.real_user else "我", text, _when(e))


def is_question(sentence: str) -> bool:
    """A question asks (「我下个月要考什么来着，你还记得吗」); a request asked nicely (「明天提醒我带伞好吗」)
    is a to-do."""
    body = sentence.strip().rstrip("。.!！~～…")
    if proposes(body):  # 「以后每天晚上十点我们互道晚安吧，好不好？」 asks for an agreement, not a fact
        return False
    if re.search(r"来着[?？]?$|记得吗|还记得|[?？]$", body) and not NICE_REQUEST.search(body):
        return True
    return asks(body) and not NICE_REQUEST.search(body)


NICE_REQUEST = re.compile(
    r"(?:提醒|叫|喊|催|陪|帮|监督)我.{0,20}"
    r"(?:好吗|好不好|行吗|行不行|可以吗|好嘛|哦|啊|呀)?[?？]?$"
)


def _matching(rows: list[Said], pattern: re.Pattern, limit: int, questions: bool = True) -> list[Said]:
    """The latest sentences matching `pattern`, newest last, each quoted verbatim (questions left out when
    `questions` is False: asking whether something was promised promises nothing)."""
    found: list[Said] = []
    seen: set[str] = set()
    for row in reversed(rows):
        for sentence in reversed(sentences(row.text)):
            if (
                pattern.search(sentence)
                and sentence not in seen
                and len(sentence) <= 80
                and (questions or not is_question(sentence))
            ):
                seen.add(sentence)
                found.append(Said(row.who, sentence, row.when, row.from_summary))
                if len(found) == limit:
                    return found[::-1]
    return found[::-1]


def _keywords(rows: list[Said]) -> list[str]:
    # read newest first: of words said as often, the ones the chat ended on are the topic (a chat that
    # moved on from an allergy to a run tonight is about the run)
    counts = Counter(
        w
        for r in reversed(rows)
        for w in words(r.text)
        if len(w) >= 2 and w not in COMMON and w not in STOP and not w.isdigit() and not (w.isascii() and len(w) < 3)
    )
    return [w for w, _ in counts.most_common(3)]
