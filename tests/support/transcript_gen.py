"""Generated Claude Code transcripts with the shapes real ones have (2.1-style lines, parallel tool calls
parented on their own tool_use line, legacy progress lines, compaction, sidechains, images, CJK text,
malformed lines). Used by the property tests and by bench/.

The builder records the active chain it meant to write (`expected_chain`), so tests can compare the
chain ombre rebuilds with the one the generator intended.
"""
from __future__ import annotations

import base64
import datetime as dt
import json
import random
import uuid as uuidlib
from dataclasses import dataclass, field

CJK = "今天我们一起去散步吧天气很好你累不累晚上想吃什么记得早点睡觉周四下午复诊别忘了带病历本好的我知道了"
ASCII = "the quick brown fox jumps over the lazy dog while logs scroll past 0123456789 "


def cjk_text(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(CJK) for _ in range(n))


def ascii_text(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(ASCII) for _ in range(n))


def fake_png(rng: random.Random, nbytes: int) -> str:
    return base64.b64encode(rng.randbytes(nbytes)).decode()


@dataclass
class SessionBuilder:
    rng: random.Random
    sid: str = field(default_factory=lambda: str(uuidlib.uuid4()))
    cwd: str = "/home/user/companion"
    version: str = "2.1.39"
    clock: dt.datetime = field(default_factory=lambda: dt.datetime(2026, 8, 3, 1, 0, tzinfo=dt.timezone.utc))
    lines: list[str] = field(default_factory=list)
    expected_chain: list[str] = field(default_factory=list)  # uuids of user/assistant lines, active chain
    last: str | None = None  # uuid the next chain line hangs off
    legacy_progress: bool = False
    usage_input: int = 3_000

    def _uuid(self) -> str:
        return str(uuidlib.UUID(int=self.rng.getrandbits(128), version=4))

    def _tick(self, ms_max: int = 4_000) -> str:
        self.clock += dt.timedelta(milliseconds=self.rng.randint(1, ms_max))
        return self.clock.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.clock.microsecond // 1000:03d}Z"

    def advance(self, hours: float) -> None:
        self.clock += dt.timedelta(hours=hours)

    def _base(self, parent: str | None, sidechain: bool = False) -> dict:
        return {"parentUuid": parent, "isSidechain": sidechain, "userType": "external", "cwd": self.cwd,
                "sessionId": self.sid, "version": self.version, "gitBranch": "main"}

    def _emit(self, obj: dict) -> None:
        self.lines.append(json.dumps(obj, ensure_ascii=False, separators=(",", ":")))

    def metadata(self) -> None:
        self._emit({"type": "file-history-snapshot", "messageId": self._uuid(),
                    "snapshot": {"trackedFileBackups": {}, "timestamp": self._tick()}, "isSnapshotUpdate": False})

    def user(self, content: object, gap_ms: int = 60_000, **extra: object) -> str:
        u = self._uuid()
        obj = self._base(self.last) | {"type": "user", "message": {"role": "user", "content": content}}
        obj.update(extra)
        obj |= {"uuid": u, "timestamp": self._tick(gap_ms)}
        self._emit(obj)
        self.last = u
        self.expected_chain.append(u)
        return u

    def say(self, text: str) -> str:
        return self.user(text)

    def _assistant_line(self, parent: str | None, msg_id: str, block: dict, usage: dict) -> str:
        u = self._uuid()
        obj = self._base(parent) | {
            "message": {"model": "claude-opus-4-6", "id": msg_id, "type": "message", "role": "assistant",
                        "content": [block], "stop_reason": None, "stop_sequence": None, "usage": usage},
            "requestId": "req_" + msg_id[4:], "type": "assistant", "uuid": u, "timestamp": self._tick(800)}
        self._emit(obj)
        return u

    def _usage(self) -> dict:
        self.usage_input += self.rng.randint(200, 4_000)
        return {"input_tokens": 3, "cache_creation_input_tokens": 500, "cache_read_input_tokens": self.usage_input,
                "output_tokens": 120}

    def _progress(self) -> None:
        if not self.legacy_progress:
            return
        u = self._uuid()
        obj = self._base(self.last) | {"type": "progress", "data": {"type": "hook_progress"},
                                       "timestamp": self._tick(50), "uuid": u}
        self._emit(obj)
        self.last = u

    def reply(self, blocks: list[dict]) -> list[str]:
        """One API response written as one line per block, sharing message.id and usage."""
        msg_id = "msg_" + "".join(self.rng.choice("abcdefghijklmnop0123456789") for _ in range(24))
        usage = self._usage()
        out = []
        for block in blocks:
            u = self._assistant_line(self.last, msg_id, block, usage)
            self.last = u
            self.expected_chain.append(u)
            out.append(u)
        return out

    def tool_round(self, calls: list[tuple[str, dict, object]], thinking: str | None = None) -> None:
        """Parallel tool calls in one response; each result hangs off its own tool_use line (2.1)."""
        msg_id = "msg_" + "".join(self.rng.choice("abcdefghijklmnop0123456789") for _ in range(24))
        usage = self._usage()
        if thinking:
            u = self._assistant_line(self.last, msg_id, {"type": "thinking", "thinking": thinking,
                                                         "signature": base64.b64encode(thinking.encode()).decode()},
                                     usage)
            self.last = u
            self.expected_chain.append(u)
        owners = []
        for name, inp, _ in calls:
            tid = "toolu_" + self._uuid().replace("-", "")[:24]
            u = self._assistant_line(self.last, msg_id, {"type": "tool_use", "id": tid, "name": name, "input": inp},
                                     usage)
            self.expected_chain.append(u)
            owners.append((u, tid))
            self.last = u
            self._progress()
        for (owner, tid), (_, _, result) in zip(owners, calls):
            r = self._uuid()
            obj = self._base(owner) | {"type": "user", "message": {"role": "user", "content": [
                {"tool_use_id": tid, "type": "tool_result", "content": result}]},
                "uuid": r, "timestamp": self._tick(2_000), "toolUseResult": {"stdout": "…"},
                "sourceToolAssistantUUID": owner}
            self._emit(obj)
            self.expected_chain.append(r)
            self.last = r

    def tool_round_spanning(self, calls: list[tuple[str, dict, object]]) -> None:
        """Issue #16 shape (a): one API response whose message.id spans a tool result — the first call and
        its result, then the other calls under the SAME message.id, each result on its own call's line.
        Only the last result is on the chain; Claude Code (cli.js, the parallel tool-result recovery) puts
        the others back after the response's last line on the chain."""
        msg_id = "msg_" + "".join(self.rng.choice("abcdefghijklmnop0123456789") for _ in range(24))
        usage = self._usage()

        def call(parent: str | None, name: str, inp: dict) -> tuple[str, str]:
            tid = "toolu_" + self._uuid().replace("-", "")[:24]
            return self._assistant_line(parent, msg_id, {"type": "tool_use", "id": tid, "name": name, "input": inp},
                                        usage), tid

        def result(owner: str, tid: str, content: object) -> str:
            r = self._uuid()
            self._emit(self._base(owner) | {"type": "user", "message": {"role": "user", "content": [
                {"tool_use_id": tid, "type": "tool_result", "content": content}]},
                "uuid": r, "timestamp": self._tick(2_000), "sourceToolAssistantUUID": owner})
            return r

        (name, inp, out), rest = calls[0], calls[1:]
        first, tid = call(self.last, name, inp)
        first_result = result(first, tid, out)
        self.expected_chain += [first, first_result]
        self.last = first_result
        owners = []
        for name, inp, _ in rest:
            u, tid = call(self.last, name, inp)
            owners.append((u, tid))
            self.expected_chain.append(u)
            self.last = u
        for (owner, tid), (_, _, out) in zip(owners, rest):
            r = result(owner, tid, out)
            self.expected_chain.append(r)
            self.last = r

    def streamed(self, batches: list[list[tuple[str, dict, object]]], *, parent_progress: bool = False,
                 between: bool = False) -> None:
        """One API response streamed as Claude Code 2.1 writes it: its tool calls run in batches while it
        streams, so the same message.id continues after tool results. Each tool_use line hangs off the line
        written before it, each result off its own tool_use line, and results come back in any order; the
        next batch hangs off the last result written. Progress lines (hook and tool progress) fall in
        between; with `parent_progress` (2.1.3x) the next line may hang off one of them. With `between`, a
        text line of the same response sits between two batches.

        Expected chain (Claude Code's walk and its parallel tool-result recovery): per batch, the calls up to
        the one whose result came last, then that result; every other line of the response (calls after it,
        other results), assistants first, each group in time order, right after the last on-chain call."""
        msg_id = "msg_" + "".join(self.rng.choice("abcdefghijklmnop0123456789") for _ in range(24))
        usage = self._usage()
        off_assistants: list[str] = []
        off_results: list[str] = []
        last_on_chain: int = -1
        for n, calls in enumerate(batches):
            if between and n:
                u = self._assistant_line(self._parent(parent_progress), msg_id,
                                         {"type": "text", "text": "先看到这里，" + cjk_text(self.rng, 8)}, usage)
                self.expected_chain.append(u)
                self.last = u
            owners = []
            for name, inp, _ in calls:
                tid = "toolu_" + self._uuid().replace("-", "")[:24]
                u = self._assistant_line(self._parent(parent_progress), msg_id,
                                         {"type": "tool_use", "id": tid, "name": name, "input": inp}, usage)
                owners.append((u, tid))
                self.last = u
                self._loose_progress(u)
            order = list(range(len(calls)))
            self.rng.shuffle(order)
            written = []
            for i in order:
                owner, tid = owners[i]
                parent = owner
                if parent_progress and self.rng.random() < 0.3:
                    parent = self._loose_progress(owner) or owner  # a result under its call's hook progress
                r = self._uuid()
                self._emit(self._base(parent) | {"type": "user", "message": {"role": "user", "content": [
                    {"tool_use_id": tid, "type": "tool_result", "content": calls[i][2]}]},
                    "uuid": r, "timestamp": self._tick(2_000), "toolUseResult": {"stdout": "…"},
                    "sourceToolAssistantUUID": owner})
                written.append((i, r))
                self._loose_progress(r)
            k, last_result = written[-1]
            self.expected_chain += [u for u, _ in owners[: k + 1]]
            last_on_chain = len(self.expected_chain) - 1
            self.expected_chain.append(last_result)
            off_assistants += [u for u, _ in owners[k + 1:]]
            off_results += [r for i, r in written[:-1]]
            self.last = last_result
        # recovered after the response's last on-chain line, assistants first (time order = write order)
        recovered = [u for u in off_assistants] + sorted(off_results, key=self._written_at)
        self.expected_chain[last_on_chain + 1:last_on_chain + 1] = recovered

    def _written_at(self, uuid: str) -> int:
        return next(i for i, line in enumerate(self.lines) if f'"uuid":"{uuid}"' in line)

    def _parent(self, parent_progress: bool) -> str | None:
        """The line a new line hangs off: the last one written, or (2.1.3x) a progress line after it."""
        if parent_progress and self.rng.random() < 0.5:
            return self._loose_progress(self.last) or self.last
        return self.last

    def _loose_progress(self, parent: str | None) -> str | None:
        """0-2 progress lines hanging off `parent` (off the chain unless something hangs off them)."""
        last = None
        for _ in range(self.rng.randint(0, 2)):
            u = self._uuid()
            self._emit(self._base(last or parent) | {"type": "progress", "data": {"type": "hook_progress"},
                                                    "toolUseID": "toolu_x", "timestamp": self._tick(50), "uuid": u})
            last = u
        return last

    def task_notification(self) -> None:
        """A background task reporting back: a user line the person did not type, answered by the assistant."""
        self.user("<task-notification>\n<task-id>b" + self._uuid()[:6] + "</task-id>\n<status>completed</status>\n"
                  "<summary>后台任务完成：" + cjk_text(self.rng, 10) + "</summary>\n</task-notification>")
        self.reply([{"type": "text", "text": "后台的活干完了：" + cjk_text(self.rng, 12)}])

    def attachment(self, text: str) -> None:
        """Hook context Claude Code stores beside the prompt (a UserPromptSubmit hook's additionalContext)."""
        u = self._uuid()
        self._emit(self._base(self.last) | {"type": "attachment", "attachment": {
            "type": "hook_additional_context", "content": [text], "hookName": "UserPromptSubmit",
            "toolUseID": "hook-" + u[:8], "hookEvent": "UserPromptSubmit"}, "uuid": u, "timestamp": self._tick(20)})
        self.last = u

    def compact(self, summary: str) -> None:
        b = self._uuid()
        self._emit(self._base(None) | {"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted",
                                       "isMeta": False, "timestamp": self._tick(), "uuid": b, "level": "info",
                                       "logicalParentUuid": self.last, "compactMetadata": {"trigger": "auto"}})
        self.last = b
        self.expected_chain.clear()
        self.user(summary, isCompactSummary=True, isVisibleInTranscriptOnly=True)

    def sidechain(self, n: int) -> None:
        """A subagent's lines written inline, off the main chain."""
        parent = None
        for i in range(n):
            u = self._uuid()
            kind = "user" if i % 2 == 0 else "assistant"
            msg = {"role": kind, "content": [{"type": "text", "text": "sub " + str(i)}]}
            if kind == "assistant":
                msg |= {"id": "msg_side" + self._uuid()[:8], "model": "claude-haiku", "usage": {"input_tokens": 1,
                                                                                                 "output_tokens": 1}}
            self._emit(self._base(parent, sidechain=True) | {"type": kind, "message": msg, "uuid": u,
                                                            "timestamp": self._tick(100)})
            parent = u

    def system_note(self) -> None:
        u = self._uuid()
        self._emit(self._base(self.last) | {"type": "system", "subtype": "turn_duration", "durationMs": 1234,
                                            "uuid": u, "timestamp": self._tick(50)})
        self.last = u

    def malformed(self) -> None:
        self.lines.append('{"parentUuid":"broken", "type":"user", "message": {')

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def companion_session(rng: random.Random, turns: int = 12, *, tool_every: int = 2, image_every: int = 0,
                      payload_chars: int = 3_000, compact_at: int | None = None, sidechain_at: int | None = None,
                      legacy_progress: bool = False, days: int = 1, thinking: bool = True,
                      spanning: bool = False, streamed: bool = False, notes: bool = False) -> SessionBuilder:
    """A long companion chat: CJK dialogue, thinking, parallel tool calls with long output, images."""
    b = SessionBuilder(rng, legacy_progress=legacy_progress)
    per_day = max(1, turns // days)
    for t in range(turns):
        if t and t % per_day == 0:
            b.advance(20)
        if compact_at is not None and t == compact_at:
            b.compact("This session is being continued from a previous conversation. 摘要：" + cjk_text(rng, 40))
        if sidechain_at is not None and t == sidechain_at:
            b.sidechain(4)
        b.metadata()
        if image_every and t % image_every == image_every - 1:
            b.user([{"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                 "data": fake_png(rng, payload_chars)}},
                    {"type": "text", "text": "看这张照片：" + cjk_text(rng, 20)}])
        else:
            b.say(cjk_text(rng, rng.randint(5, 60)))
        if notes and rng.random() < 0.3:
            b.attachment("<system-reminder>ombre 本轮记忆：" + cjk_text(rng, 12) + "</system-reminder>")
        if tool_every and t % tool_every == 0:
            calls = [("Bash", {"command": "cat notes.txt", "description": "read"},
                      ascii_text(rng, rng.randint(payload_chars // 2, payload_chars)))
                     for _ in range(rng.randint(1, 3))]
            if streamed and rng.random() < 0.7:
                batches = [[("Bash", {"command": f"step {n}.{i}"}, ascii_text(rng, rng.randint(payload_chars // 2,
                                                                                              payload_chars)))
                            for i in range(rng.randint(1, 3))] for n in range(rng.randint(1, 3))]
                b.streamed(batches, parent_progress=rng.random() < 0.5, between=rng.random() < 0.3)
            elif spanning and len(calls) > 1 or spanning and rng.random() < 0.5:
                calls += [("Read", {"file_path": "notes.txt"}, ascii_text(rng, payload_chars // 2))] * (len(calls) < 2)
                b.tool_round_spanning(calls)
            else:
                b.tool_round(calls, thinking=cjk_text(rng, 30) if thinking else None)
        blocks = [{"type": "thinking", "thinking": cjk_text(rng, 40),
                   "signature": base64.b64encode(rng.randbytes(48)).decode()}] if thinking else []
        blocks.append({"type": "text", "text": cjk_text(rng, rng.randint(10, 120))})
        b.reply(blocks)
        if rng.random() < 0.3:
            b.system_note()
        if notes and rng.random() < 0.25:
            b.task_notification()
    return b


def long_agentic_turn(rng: random.Random, *, compacted: bool, **builder: object) -> SessionBuilder:
    """One long agentic turn: a person's request, twenty rounds of tool calls with long output, a reply. With
    `compacted`: the chain starts at a compaction summary and no person message follows."""
    b = SessionBuilder(rng, **builder)
    b.metadata()
    if compacted:
        b.say("先帮我看看这个项目")
        b.reply([{"type": "text", "text": "好的"}])
        b.compact("之前在修测试，修到一半。")
    else:
        b.say("帮我把这个项目的测试都修好")
    for i in range(20):
        b.tool_round([("Bash", {"command": f"pytest -k case{i}"}, f"第{i}轮 " + "x" * 4_000),
                      ("Read", {"file_path": f"src/m{i}.py"}, "y" * 3_000),
                      ], thinking=f"第{i}步想一想" if i % 3 == 0 else None)
    b.reply([{"type": "text", "text": "都修好了"}])
    return b
