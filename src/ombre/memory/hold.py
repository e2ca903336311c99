"""hold: write one memory — validated, judged by write_gate, capped by scarcity, raw text committed
first and enriched (embedding) after, so a failing embedder never loses a write."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import asdict, dataclass, field
from typing import Callable, Mapping

from .. import wire
from ..clock import iso, now_utc, shanghai_date
from ..errors import MemoryInputError
from . import arbitration, scarcity, write_gate
from .arbitration import Verdict
from .embed import Embedder
from .model import BUILTIN_TYPES, CONFIRMED, UNCONFIRMED, Evidence, Memory
from .rows import terms_of
from .segment import query_terms
from .store import GateEntry, MemoryStore

_SENTENCE_END = re.compile(r"[。！？!?；;]+|\.(?=\s|$)")


@dataclass
class HoldRequest:
    """The parameters of the public Ombre's `hold` tool, plus the evidence chain and the source."""

    content: str
    title: str = ""
    type: str = "事件"
    tags: list[str] = field(default_factory=list)
    importance: int = 5
    pinned: bool = False
    valence: float = 0.5
    arousal: float = 0.3
    domain: str = ""
    event_date: str | None = None
    quote: str | None = None
    from_session: str | None = None
    evidence_date: str | None = None
    source: str = "manual"  # manual | auto


@dataclass
class HoldResult:
    stored: bool
    decision: str
    id: str | None = None
    status: str | None = None
    importance: int | None = None
    pinned: bool = False
    reasons: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    scarcity: list[str] = field(default_factory=list)
    embedded: bool = False
    arbitration: dict | None = None  # the verdict, when the memory was arbitrated

    def to_dict(self) -> dict:
        return asdict(self)


def validate(req: HoldRequest, *, max_chars: int, types: tuple[str, ...]) -> None:
    wire.check(asdict(req), "the hold request")
    content = (req.content or "").strip()
    if not content:
        raise MemoryInputError("content is empty", hint="hold needs the text to remember")
    if len(content) > max_chars:
        raise MemoryInputError(
            f"content is {len(content)} characters, over the limit of {max_chars}",
            hint="hold one fact at a time; raise OMBRE_MAX_CONTENT_CHARS if you must",
        )
    if not isinstance(req.importance, int) or isinstance(req.importance, bool) or not 1 <= req.importance <= 10:
        raise MemoryInputError(f"importance {req.importance!r} is not a whole number from 1 to 10")
    for name in ("valence", "arousal"):
        value = getattr(req, name)
        if not isinstance(value, (int, float)) or not 0.0 <= float(value) <= 1.0:
            raise MemoryInputError(f"{name} {value!r} is not between 0 and 1")
    if req.type not in types:
        raise MemoryInputError(
            f"unknown type {req.type!r}",
            hint="use one of " + " | ".join(types) + "; add your own with OMBRE_EXTRA_TYPES",
        )
    if req.source not in ("manual", "auto"):
        raise MemoryInputError(f"source {req.source!r} is neither manual nor auto")
    if req.quote is not None:
        quote = req.quote.strip()
        if len([s for s in _SENTENCE_END.split(quote) if s.strip()]) > 2 or len(quote) > 300:
            raise MemoryInputError(
                "a quote is at most two sentences of the person's own words",
                hint="keep the words that carry the fact; leave the quote out if unsure",
            )
    for name in ("event_date", "evidence_date"):
        value = getattr(req, name)
        if value:
            try:
                dt.date.fromisoformat(value)
            except ValueError:
                raise MemoryInputError(f"{name} {value!r} is not a date (YYYY-MM-DD)") from None
    if not isinstance(req.tags, list) or not all(isinstance(t, str) for t in req.tags):
        raise MemoryInputError("tags must be a list of strings")


def hold(
    store: MemoryStore,
    req: HoldRequest,
    *,
    encoders: Mapping[str, Embedder] | None = None,
    max_chars: int = 4_000,
    extra_types: tuple[str, ...] = (),
    auto_daily: int = 8,
    max_pinned: int = 20,
    max_10: int = 5,
    max_9: int = 20,
    now: dt.datetime | None = None,
    arbitrate: Callable[[Memory], Verdict] | None = None,
) -> HoldResult:
    now = now or now_utc()
    validate(req, max_chars=max_chars, types=BUILTIN_TYPES + tuple(extra_types))
    stamp, today = iso(now), shanghai_date(now)
    quote = req.quote.strip() if req.quote and req.quote.strip() else None
    memory = Memory(
        content=req.content.strip(),
        title=req.title.strip(),
        type=req.type,
        tags=list(dict.fromkeys(t.strip() for t in req.tags if t.strip())),
        importance=req.importance,
        pinned=bool(req.pinned),
        valence=float(req.valence),
        arousal=float(req.arousal),
        domain=req.domain,
        event_date=req.event_date,
        created=stamp,
        last_active=stamp,
        status=UNCONFIRMED,
        evidence=Evidence(req.from_session, req.evidence_date or (today if quote else None), quote),
    )
    verdict, arbitration_failed = None, None
    if arbitrate is not None and arbitration.needs_arbitration(memory):
        try:
            verdict = arbitrate(memory)
        except Exception as exc:  # noqa: BLE001 — a judge that fails or is late never blocks the write
            arbitration_failed = str(exc) or type(exc).__name__
    if verdict is not None and verdict.action == "skip":
        reasons = [f"仲裁：跳过（{verdict.reason or '已有同样的记忆'}）"]
        store.log_gate(GateEntry(stamp, today, req.source, "skip", reasons, memory.content))
        return HoldResult(stored=False, decision="skip", reasons=reasons, arbitration=verdict.to_dict())
    # what arbitration already related to this memory is not a duplicate to drop
    handled = {verdict.target} if verdict is not None and verdict.action != "add" else set()
    similar_ids = [i for i, _ in store.keyword_search(query_terms(memory.content), 5) if i not in handled]
    decision = write_gate.judge(
        memory,
        source=req.source,
        auto_today=store.gate_count(today, "auto", write_gate.QUOTA_DECISIONS),
        auto_daily=auto_daily,
        pinned=store.list(pinned=True),
        similar=[m for m in store.get_many(similar_ids).values() if m.current],
    )
    result = HoldResult(
        stored=decision.stores,
        decision=decision.decision,
        reasons=decision.reasons,
        warnings=decision.warnings,
        arbitration=verdict.to_dict() if verdict else None,
    )
    if not decision.stores:
        store.log_gate(GateEntry(stamp, today, req.source, decision.decision, decision.reasons, memory.content))
        return result
    memory.importance = decision.importance
    memory.status = CONFIRMED if decision.decision == write_gate.STORE else UNCONFIRMED
    if arbitration_failed is not None:
        memory.status = UNCONFIRMED  # written anyway, as unconfirmed
        result.reasons.append(f"仲裁没有完成（{arbitration_failed}）：先记为未确认")
    if verdict is not None:
        arbitration.prepare(verdict, memory, store.get(verdict.target) if verdict.target else None)
    if memory.status == UNCONFIRMED and memory.pinned and req.source == "auto":
        memory.pinned = False
        result.reasons.append("未确认的内容不自动置顶")
    result.scarcity = scarcity.enforce(
        store, memory, manual=req.source == "manual", max_pinned=max_pinned, max_10=max_10, max_9=max_9
    )
    store.add(memory, terms_of(memory))
    if verdict is not None:
        arbitration.link(store, verdict, memory, now)
    store.log_gate(
        GateEntry(
            stamp, today, req.source, decision.decision, decision.reasons + decision.warnings, memory.content, memory.id
        )
    )
    result.id, result.status, result.importance, result.pinned = (
        memory.id,
        memory.status,
        memory.importance,
        memory.pinned,
    )
    result.embedded = enrich(store, encoders or {}, [memory])
    if encoders and not result.embedded:
        result.warnings.append("向量化失败：这条已保存，关键词检索照常可用，稍后会补上")
    return result


def embedding_text(m: Memory) -> str:
    return " ".join(x for x in (m.title, m.content) if x)


def enrich(store: MemoryStore, encoders: Mapping[str, Embedder], memories: list[Memory], latents: bool = True) -> bool:
    """Give memories their vectors, encoder by encoder. Failure leaves them findable by keywords and the
    other encoder, and returns False."""
    if not encoders or not memories:
        return False
    ok = True
    texts = [embedding_text(m) for m in memories]
    ids = [m.id for m in memories]
    for key, embedder in encoders.items():
        try:
            store.set_vectors(key, list(zip(ids, embedder.passages(texts))))
        except Exception:  # noqa: BLE001 — any embedder failure must leave the write intact
            ok = False
    return (enrich_latents(store, encoders, memories) if latents else True) and ok


def enrich_latents(store: MemoryStore, encoders: Mapping[str, Embedder], memories: list[Memory]) -> bool:
    """Give memories their latent terms (embed.E5Embedder.latents), if the e5 model is there to read them."""
    latents = getattr(encoders.get("e5"), "latents", None)
    if latents is None or not memories:
        return True
    try:
        store.set_latents(list(zip([m.id for m in memories], latents([embedding_text(m) for m in memories]))))
    except Exception:  # noqa: BLE001 — as above: the memory stays, the background fills them in later
        return False
    return True


def enrich_pending(
    store: MemoryStore,
    encoders: Mapping[str, Embedder],
    batch: int = 64,
    progress: Callable[[str, int], None] | None = None,
) -> int:
    """Fill in vectors that an earlier failure, or an encoder added later, left out, and the latent terms;
    returns how many vectors were filled. Resumable: what is still to do is exactly what has no vector."""
    done = 0
    for key, embedder in encoders.items():
        while True:
            todo = store.without_vectors(key, batch)
            if not todo or not enrich(store, {key: embedder}, todo, latents=False):
                break
            done += len(todo)
            if progress is not None:
                progress(key, len(todo))
    while "e5" in encoders:  # then the latent terms (counted apart: `progress` only)
        todo = store.without_latents(batch)
        if not todo or not enrich_latents(store, encoders, todo):
            break
        if progress is not None:
            progress("latent", len(todo))
    return done
