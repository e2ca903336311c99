"""How a memory is laid out as a database row: shared by the SQLite and the PostgreSQL stores."""

from __future__ import annotations

import json

from .model import Evidence, Memory
from .segment import document

FIELDS = (
    "content",
    "title",
    "type",
    "tags",
    "importance",
    "pinned",
    "valence",
    "arousal",
    "domain",
    "event_date",
    "created",
    "last_active",
    "activation_count",
    "status",
    "archived",
    "from_session",
    "evidence_date",
    "quote",
    "superseded_by",
    "situation",
    "conflicts",
    "trace",
    "earlier_quotes",
)
# Each encoder's vectors live in their own pair of columns (the vector, and the model that made it).
VECTOR_COLUMNS = {"e5": ("embedding", "embed_model"), "use": ("embedding_use", "use_model")}
VECTOR_NAMES = [c for pair in VECTOR_COLUMNS.values() for c in pair]
# a memory as row_to_memory reads it: its fields, then whether each encoder's vector is there
COLUMNS = "id, " + ", ".join(FIELDS) + "".join(f", {vec} IS NOT NULL" for vec, _ in VECTOR_COLUMNS.values())


def distinct_terms(terms: tuple[str, str]) -> set[str]:
    """The terms one indexed memory holds, as term_docs counts them (once per memory)."""
    return set(f"{terms[0]} {terms[1]}".split())


def row_to_memory(row: tuple) -> Memory:
    (
        mid,
        content,
        title,
        kind,
        tags,
        importance,
        pinned,
        valence,
        arousal,
        domain,
        event_date,
        created,
        last_active,
        activation,
        status,
        archived,
        from_session,
        ev_date,
        quote,
        superseded_by,
        situation,
        conflicts,
        trace,
        earlier_quotes,
        *has_vectors,
    ) = row
    return Memory(
        id=mid,
        content=content,
        title=title,
        type=kind,
        tags=json.loads(tags),
        importance=importance,
        pinned=bool(pinned),
        valence=valence,
        arousal=arousal,
        domain=domain,
        event_date=event_date,
        created=created,
        last_active=last_active,
        activation_count=activation,
        status=status,
        archived=bool(archived),
        evidence=Evidence(from_session, ev_date, quote, json.loads(earlier_quotes)),
        superseded_by=superseded_by,
        situation=situation,
        conflicts=json.loads(conflicts),
        trace=json.loads(trace),
        vectors=[key for key, has in zip(VECTOR_COLUMNS, has_vectors) if has],
    )


def row_values(m: Memory) -> tuple:
    return (
        m.content,
        m.title,
        m.type,
        json.dumps(m.tags, ensure_ascii=False),
        m.importance,
        int(m.pinned),
        m.valence,
        m.arousal,
        m.domain,
        m.event_date,
        m.created,
        m.last_active,
        m.activation_count,
        m.status,
        int(m.archived),
        m.evidence.from_session,
        m.evidence.date,
        m.evidence.quote,
        m.superseded_by,
        m.situation,
        json.dumps(m.conflicts),
        json.dumps(m.trace, ensure_ascii=False),
        json.dumps(m.evidence.earlier, ensure_ascii=False),
    )


def terms_of(memory: Memory) -> tuple[str, str]:
    """A memory's indexed columns (its keys and character bigrams), from its title, content and tags."""
    return _document(memory.title, memory.content, memory.tags)


def document_of(title: str, content: str, tags: str) -> tuple[str, str]:
    """The indexed columns of a stored memory (tags as stored: JSON), as terms_of makes them."""
    try:
        tag_list = json.loads(tags or "[]")
    except ValueError:
        tag_list = []
    return _document(title or "", content or "", [t for t in tag_list if isinstance(t, str)])


def _document(title: str, content: str, tags: list[str]) -> tuple[str, str]:
    return document(" ".join([title, content, " ".join(tags)]))
