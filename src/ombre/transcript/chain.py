"""The active chain of a session, rebuilt as Claude Code rebuilds it on `--resume`, and its events.

One pass over the file keeps a small record per line (no message bodies), so memory stays flat in the
file's size. From those records:

* the leaf is chosen as Claude Code 2.1.112 chooses it (the last non-sidechain message line in the file, or
  its nearest user/assistant ancestor);
* `parentUuid` is followed back to the root or to the latest compaction boundary (with its preserved
  segment relinked, if any); `progress` lines of older releases are bridged over; a parent that is not
  there is replaced by the closest message at most 5 s older, as Claude Code does;
* parallel tool calls are made whole again: assistant lines sharing `message.id`, and tool_result lines that
  hang off a sibling tool_use instead of the chain, are put back after their response.

The user/assistant lines of that chain are the *events*; their position is `idx`. Every command that shows
or takes an idx uses this one list.
"""

from __future__ import annotations

import datetime as dt
import gc
import io
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Callable, Iterable, Iterator

from ..clock import parse_timestamp
from ..tokens import estimate_block, estimate_content, estimate_json, estimate_text, usage_context, window_for
from .lines import PREVIEW_CHARS, _first_text, is_command_echo, is_real_user, message_text  # noqa: F401 — re-exported
from .reader import Fingerprint, describe_error, parse_line
from .writer import dump_line

READ_BUFFER = 1 << 20  # lines of tool output and images run to megabytes; small buffers re-copy them
MESSAGE_TYPES = ("user", "assistant")

# A line rewrite gets the parsed line and its size in bytes; it returns the changed object (or None for
# unchanged) and any stats the caller keeps.
Rewrite = Callable[[dict, int], "tuple[dict | None, object]"]


@dataclass(slots=True)
class Entry:
    """What we remember of one line that carries a `uuid` (a message, progress, system or attachment line)."""

    lineno: int
    offset: int
    type: str
    uuid: str
    parent: str | None
    timestamp: str | None
    sidechain: bool = False
    subtype: str | None = None
    logical_parent: str | None = None
    msg_id: str | None = None
    model: str | None = None
    usage_ctx: int | None = None
    tool_uses: tuple[str, ...] = ()
    tool_results: tuple[str, ...] = ()
    real_user: bool = False
    meta: bool = False
    compact_summary: bool = False
    carry: tuple[str, ...] = ()  # an ombre carry line's block kinds (see window/carry.py); () for other lines
    text_preview: str = ""
    tokens: int | None = None  # estimated size; None until measured (see Transcript.measure)
    rider_tokens: int = 0  # attachments riding on this event, which Claude Code also sends
    thinking: int = 0
    images: int = 0
    preserved: tuple[str, str, str] | None = None  # compactMetadata.preservedSegment (head, anchor, tail)
    spool: tuple[int, int] | None = None  # where the rewritten line sits in the spool
    rewrite_stats: object = None
    idx: int = -1  # position among events; -1 for lines that are not events

    @property
    def is_event(self) -> bool:
        return self.type in MESSAGE_TYPES

    @property
    def size(self) -> int:
        """Estimated tokens this line costs in a request (its own blocks and any riding attachments)."""
        if self.tokens is None:
            raise RuntimeError(f"line {self.lineno} was not measured; call Transcript.measure first")
        return self.tokens + self.rider_tokens

    @property
    def when(self) -> dt.datetime | None:
        return parse_timestamp(self.timestamp)

    @property
    def short_uuid(self) -> str:
        return self.uuid[:8]


@dataclass(slots=True)
class BadLine:
    lineno: int
    offset: int
    error: str


@dataclass
class Transcript:
    """A scanned session file: line records, the active chain and its events. Bodies stay on disk."""

    path: Path
    fingerprint: Fingerprint
    entries: list[Entry]
    bad_lines: list[BadLine]
    chain: list[Entry]  # messages of the active chain, root first (progress lines left out)
    boundary: Entry | None  # the compaction boundary the chain starts after, if any
    leaf: Entry | None
    lines_total: int
    rewrite: Rewrite | None = None  # applied to message lines as they are measured (diet/forge squash)
    _spool: BinaryIO | None = field(default=None, repr=False)
    _events: list[Entry] | None = field(default=None, repr=False)
    _reader: BinaryIO | None = field(default=None, repr=False)

    @property
    def session_id(self) -> str:
        return self.path.stem

    @property
    def events(self) -> list[Entry]:
        if self._events is None:
            self._events = [e for e in self.chain if e.is_event]
        return self._events

    def _last_reply(self) -> Entry | None:
        last = next((e for e in reversed(self.chain) if e.type == "assistant"), None)
        return self.measure([last])[0] if last is not None else None

    @property
    def last_usage(self) -> int | None:
        """The stored context size of the last assistant reply (what Claude Code trusts on resume)."""
        last = self._last_reply()
        return last.usage_ctx if last else None

    @property
    def model(self) -> str | None:
        last = self._last_reply()
        return last.model if last else None

    def window(self, default: int) -> int:
        return window_for(self.model, self.last_usage, default)

    def measure(self, entries: list[Entry]) -> list[Entry]:
        """Fill sizes, previews and usage of `entries` that are not measured yet, rewriting them first.

        The first pass keeps only what the chain needs, so it costs little more than parsing. The lines an
        operation looks at (a tail to retain, the ends of a range) are read again here; the rewrite (a
        squash) applies to them alone, and a changed line goes to a spool so it is never parsed twice.
        """
        todo = sorted((e for e in entries if e.tokens is None), key=lambda e: e.offset)
        for e in todo:
            data = self._original(e)
            obj = parse_line(data)
            if self.rewrite is not None and e.is_event:
                changed, e.rewrite_stats = self.rewrite(obj, len(data))
                if changed is not None:
                    obj = changed
                    if self._spool is None:
                        self._spool = tempfile.TemporaryFile(prefix="ombre-spool-")
                    blob = dump_line(changed)
                    self._spool.seek(0, io.SEEK_END)
                    e.spool = (self._spool.tell(), len(blob))
                    self._spool.write(blob)
            _measure(e, obj)
        return entries

    def spoken(self, events: Iterable[Entry] | None = None) -> Iterator[tuple[Entry, str]]:
        """The person's and the assistant's words on the active chain, oldest first: (event, text) for real
        user messages and assistant text, without slash-command echoes or lines that hold no text.
        `events` narrows the walk to some of the chain's events, so lines left out are never read."""
        for e in self.events if events is None else events:
            if e.real_user or e.type == "assistant":
                text = message_text(self.load(e)).strip()
                if text and not is_command_echo(text):
                    yield e, text

    def load(self, entry: Entry) -> dict:
        """A line's object as an operation keeps it: the rewritten one if there is one, else the original."""
        if entry.spool is not None and self._spool is not None:
            off, n = entry.spool
            self._spool.seek(off)
            return parse_line(self._spool.read(n))
        return parse_line(self._original(entry))

    def _original(self, entry: Entry) -> bytes:
        # One handle for every re-read: a kept window is hundreds of lines, not hundreds of opens.
        if self._reader is None:
            self._reader = open(self.path, "rb", buffering=READ_BUFFER)
        self._reader.seek(entry.offset)
        return self._reader.readline()

    def close(self) -> None:
        for handle in (self._spool, self._reader):
            if handle is not None:
                handle.close()
        self._spool = self._reader = None

    def __enter__(self) -> "Transcript":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def clip(text: str, n: int = PREVIEW_CHARS) -> str:
    """`text` on one line, at most `n` characters (an ellipsis marks a cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= n else flat[: n - 1] + "…"


def _preview_of(content: object) -> str:
    """A short line for a person: the text, or what kind of block there is when there is no text."""
    text = _first_text(content)
    if text.strip() or not isinstance(content, list):
        return clip(text)
    kinds = []
    for b in content:
        if isinstance(b, dict):
            kind = b.get("type")
            kinds.append(f"[{kind} {b.get('name')}]" if kind == "tool_use" else f"[{kind}]")
    return clip(" ".join(kinds))


def _entry_for(lineno: int, offset: int, obj: dict) -> Entry | None:
    uuid = obj.get("uuid")
    kind = obj.get("type")
    if not isinstance(uuid, str) or not isinstance(kind, str):
        return None  # metadata lines (summary, file-history-snapshot, queue-operation, …) are off the chain
    parent = obj.get("parentUuid")
    ts = obj.get("timestamp")
    # Interned, a parent id is the same object as the uuid of the line before: one copy, not two.
    entry = Entry(
        lineno,
        offset,
        kind,
        sys.intern(uuid),
        sys.intern(parent) if isinstance(parent, str) else None,
        ts if isinstance(ts, str) else None,
        bool(obj.get("isSidechain")),
        obj.get("subtype"),
    )
    if kind in MESSAGE_TYPES:
        message = obj.get("message")
        _identify(entry, obj, message if isinstance(message, dict) else {})
        return entry
    # Other chain lines are few and small: measure them now. Claude Code turns attachments (hook
    # context, skill listings, …) into user text the model reads; other system lines cost nothing.
    entry.tokens = 0
    if kind == "attachment":
        entry.tokens = estimate_json(obj.get("attachment"))
    elif kind == "system":
        entry.logical_parent = obj.get("logicalParentUuid")
        if entry.subtype == "compact_boundary":
            seg = (obj.get("compactMetadata") or {}).get("preservedSegment")
            if isinstance(seg, dict) and all(
                isinstance(seg.get(k), str) for k in ("headUuid", "anchorUuid", "tailUuid")
            ):
                entry.preserved = (seg["headUuid"], seg["anchorUuid"], seg["tailUuid"])
        elif entry.subtype == "local_command":
            entry.tokens = estimate_text(str(obj.get("content", "")))
    return entry


def _identify(entry: Entry, obj: dict, message: dict) -> None:
    """What the chain and the turn structure need of a user/assistant line: ids, kinds, roles. Cheap."""
    msg_id = message.get("id")
    entry.msg_id = sys.intern(msg_id) if isinstance(msg_id, str) else None
    entry.meta = bool(obj.get("isMeta"))
    entry.compact_summary = bool(obj.get("isCompactSummary"))
    carry = obj.get("ombreCarry")
    if isinstance(carry, list) and all(isinstance(k, str) for k in carry):
        entry.carry = tuple(sys.intern(k) for k in carry)
    content = message.get("content")
    if isinstance(content, list):
        uses, results = [], []
        for b in content:
            if isinstance(b, dict):
                kind = b.get("type")
                if kind == "tool_use" and isinstance(b.get("id"), str):
                    uses.append(b["id"])
                elif kind == "tool_result" and isinstance(b.get("tool_use_id"), str):
                    results.append(b["tool_use_id"])
        if uses:
            entry.tool_uses = tuple(uses)
        if results:
            entry.tool_results = tuple(results)
    if entry.type == "user":
        entry.real_user = is_real_user(obj)
        entry.text_preview = _preview_of(content)


def _measure(entry: Entry, obj: dict) -> None:
    """Sizes, block counts, usage and preview: what selection and reports need of the lines they look at."""
    message = obj.get("message")
    if not isinstance(message, dict):
        message = {}
    content = message.get("content")
    entry.thinking = entry.images = 0
    if isinstance(content, list):
        tokens = 0
        for b in content:
            if isinstance(b, dict):
                tokens += estimate_block(b)
                kind = b.get("type")
                if kind == "thinking" or kind == "redacted_thinking":
                    entry.thinking += 1
                elif kind == "image" or kind == "document":
                    entry.images += 1
        entry.tokens = tokens
    else:
        entry.tokens = estimate_content(content)
    if entry.type == "assistant":
        model = message.get("model")
        entry.model = model if isinstance(model, str) else None
        entry.usage_ctx = usage_context(message.get("usage"))
    entry.text_preview = _preview_of(content)


def scan(path: Path, rewrite: Rewrite | None = None) -> Transcript:
    """Read `path` once and rebuild its active chain.

    `rewrite`, when given, is applied to each message line when it is measured (see Transcript.measure):
    only the lines an operation looks at are ever rewritten.
    """
    path = Path(path)
    before = Fingerprint.of(path)
    entries: list[Entry] = []
    bad: list[BadLine] = []
    lines_total = 0
    gc_was_on = gc.isenabled()
    gc.disable()  # the loop keeps many small records and makes no reference cycles: collections only cost
    try:
        with open(path, "rb", buffering=READ_BUFFER) as f:
            offset = 0
            for lineno, chunk in enumerate(f, start=1):
                if offset >= before.size:
                    break  # a live session appended after we looked: read what was there
                start, offset = offset, offset + len(chunk)
                if chunk[:1] != b"{" and not chunk.strip():
                    continue
                lines_total += 1
                try:
                    obj = parse_line(chunk)
                except (ValueError, UnicodeDecodeError) as exc:
                    bad.append(BadLine(lineno, start, describe_error(exc, chunk)))
                    continue
                entry = _entry_for(lineno, start, obj)
                if entry is not None:
                    entries.append(entry)
                    if entry.type in MESSAGE_TYPES and not isinstance(obj.get("message"), dict):
                        # kept on the chain (its links hold the history together) but marked: no operation
                        # may carry a line Claude Code cannot read
                        bad.append(
                            BadLine(
                                lineno, start, f"its `message` is {type(obj.get('message')).__name__}, not an object"
                            )
                        )
    finally:
        if gc_was_on:
            gc.enable()
    chain, boundary, leaf = build_chain(entries)
    _number_events(chain)
    return Transcript(
        path=path,
        fingerprint=before,
        entries=entries,
        bad_lines=bad,
        chain=chain,
        boundary=boundary,
        leaf=leaf,
        lines_total=lines_total,
        rewrite=rewrite,
    )


CHAIN_TYPES = ("user", "assistant", "attachment", "system")  # what Claude Code loads as messages
TIMESTAMP_FALLBACK_MS = 5_000  # a missing parent is replaced by a message at most this much older


def _number_events(chain: list[Entry]) -> None:
    """Give events their idx, and fold the tokens of riding lines (attachments) into the event before."""
    idx, owner = 0, None
    for e in chain:
        if e.is_event:
            e.idx, owner = idx, e
            idx += 1
        elif owner is not None and e.tokens:
            owner.rider_tokens += e.tokens
            e.tokens = 0


def choose_leaf(
    entries: list[Entry],
    parent_of: Callable[[Entry], str | None] | None = None,
    by_uuid: dict[str, Entry] | None = None,
) -> Entry | None:
    """The message `--resume` continues from (Claude Code 2.1.112, checked against its loader).

    The last non-sidechain message line in file order, or its nearest user/assistant ancestor: trailing
    `system` or `attachment` lines (e.g. turn_duration) are never leaves.
    """
    by_uuid = _message_index(entries) if by_uuid is None else by_uuid
    parent_of = parent_of or _parent_resolver(entries, {})
    last = next((e for e in reversed(entries) if e.type in CHAIN_TYPES and not e.sidechain), None)
    seen: set[str] = set()
    while last is not None and not last.is_event and last.uuid not in seen:
        seen.add(last.uuid)
        pid = parent_of(last)
        last = by_uuid.get(pid) if pid else None
    return last


def _parent_resolver(entries: list[Entry], relink: dict[str, str]) -> Callable[[Entry], str | None]:
    bridge = _progress_parents(entries)

    def parent_of(e: Entry) -> str | None:
        p = relink.get(e.uuid, e.parent)
        return bridge.get(p, p) if p in bridge else p

    return parent_of


def _message_index(entries: list[Entry]) -> dict[str, Entry]:
    # A later line with the same uuid replaces the earlier one, as in Claude Code's loader.
    return {e.uuid: e for e in entries if e.type in CHAIN_TYPES}


def _progress_parents(entries: list[Entry]) -> dict[str, str | None]:
    """Legacy `progress` lines sat on the chain; a message naming one as parent really hangs off the
    progress line's first non-progress ancestor."""
    bridge: dict[str, str | None] = {}
    for e in entries:
        if e.type == "progress":
            parent = e.parent
            bridge[e.uuid] = bridge.get(parent, parent) if parent else None
    return bridge


def _preserved_relinks(
    boundary: Entry | None, by_uuid: dict[str, Entry], children: dict[str, list[Entry]]
) -> dict[str, str]:
    """Parent overrides for a compaction that kept a raw segment (compactMetadata.preservedSegment)."""
    seg = boundary.preserved if boundary else None
    if not seg:
        return {}
    head, anchor, tail = seg
    # Claude Code checks the tail→head walk first and leaves everything alone when it is broken.
    cur, steps = by_uuid.get(tail), 0
    while cur is not None and cur.uuid != head and steps < 100_000:
        cur = by_uuid.get(cur.parent) if cur.parent else None
        steps += 1
    if cur is None or anchor not in by_uuid:
        return {}
    relink = {head: anchor}
    for child in children.get(anchor, []):
        if child.uuid != head:
            relink[child.uuid] = tail
    return relink


def build_chain(entries: list[Entry]) -> tuple[list[Entry], Entry | None, Entry | None]:
    """Walk back from the leaf; return (messages root-first, compaction boundary, leaf)."""
    by_uuid = _message_index(entries)
    relink: dict[str, str] = {}
    boundaries = [e for e in entries if e.type == "system" and e.subtype == "compact_boundary"]
    if boundaries and boundaries[-1].preserved:
        children: dict[str, list[Entry]] = {}
        for e in by_uuid.values():
            if e.parent:
                children.setdefault(e.parent, []).append(e)
        relink = _preserved_relinks(boundaries[-1], by_uuid, children)
    parent_of = _parent_resolver(entries, relink)
    leaf = choose_leaf(entries, parent_of, by_uuid)
    if leaf is None:
        return [], None, None
    walked: list[Entry] = []
    seen: set[str] = set()
    boundary: Entry | None = None
    cur: Entry | None = leaf
    while cur is not None:
        seen.add(cur.uuid)
        if cur.type == "system" and cur.subtype == "compact_boundary":
            boundary = cur
            break
        walked.append(cur)
        pid = parent_of(cur)
        if not pid:
            break
        nxt = by_uuid.get(pid)
        if nxt is None or nxt.uuid in seen:
            nxt = _timestamp_fallback(entries, cur, seen)
        cur = nxt
    walked.reverse()
    return _restore_parallel_tool_calls(walked, entries, parent_of), boundary, leaf


def _timestamp_fallback(entries: list[Entry], child: Entry, seen: set[str]) -> Entry | None:
    """Claude Code's stand-in for a parent it did not load: the closest earlier message (≤ 5 s)."""
    when = child.when
    if when is None:
        return None
    best: Entry | None = None
    best_when = None
    for e in entries:
        if e.type not in CHAIN_TYPES or e.uuid in seen or e.sidechain != child.sidechain:
            continue
        w = e.when
        if w is None or w > when or (when - w).total_seconds() * 1000 > TIMESTAMP_FALLBACK_MS:
            continue
        if best_when is None or w > best_when:
            best, best_when = e, w
    return best


def _restore_parallel_tool_calls(
    chain: list[Entry], entries: list[Entry], parent_of: Callable[[Entry], str | None]
) -> list[Entry]:
    """Put back the pieces of one API response that the parent walk skipped.

    Since 2.1 each tool_result line is parented on the line of its own tool_use, so with parallel calls
    only the last result sits on the chain. Like Claude Code 2.1.112 (its parallel tool-result recovery),
    for each message.id on the chain: the off-chain assistant lines with that id, then the off-chain
    tool_result lines whose parent (bridged over progress lines) is any line with that id, each group in
    timestamp order, go right after the last on-chain assistant line with that id. A response whose
    blocks continue after a tool result (A, its result, then B and C under the same id) is put back the
    same way; the API request merges it into one assistant message (see window/verify.py).
    """
    on_chain = {e.uuid for e in chain}
    ids_on_chain = {e.msg_id for e in chain if e.type == "assistant" and e.msg_id}
    siblings: dict[str, list[Entry]] = {}
    owner: dict[str, str] = {}  # assistant line uuid -> message.id
    for e in entries:
        if e.type == "assistant" and e.msg_id in ids_on_chain:
            owner[e.uuid] = e.msg_id
            if e.uuid not in on_chain:
                siblings.setdefault(e.msg_id, []).append(e)
    results: dict[str, list[Entry]] = {}
    for e in entries:
        if e.type == "user" and e.tool_results and e.uuid not in on_chain:
            parent = parent_of(e)
            if parent in owner:
                results.setdefault(owner[parent], []).append(e)
    if not siblings and not results:
        return chain
    last_pos = {e.msg_id: i for i, e in enumerate(chain) if e.type == "assistant" and e.msg_id}
    out: list[Entry] = []
    placed: set[str] = set()
    for i, e in enumerate(chain):
        out.append(e)
        mid = e.msg_id if e.type == "assistant" else None
        if mid and last_pos.get(mid) == i:
            for extra in sorted(siblings.get(mid, []), key=lambda x: x.timestamp or "") + sorted(
                results.get(mid, []), key=lambda x: x.timestamp or ""
            ):
                if extra.uuid not in placed:
                    placed.add(extra.uuid)
                    out.append(extra)
    return out
