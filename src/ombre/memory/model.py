"""A memory ("bucket") and its evidence chain."""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass, field

UNCONFIRMED = "未确认"
CONFIRMED = "confirmed"
COMMITMENT_TYPES = ("承诺", "约定")  # never decay, never archived automatically
HANDOFF_TYPE = "会话交接"
# The companion's own reflections (Ombre-Brain's feel): recalled only when asked for by their domain
FEEL_TYPE, FEEL_DOMAIN = "沉淀", "feel"
# A letter, kept verbatim; read when asked for (some were sealed until a day), never shown unasked
LETTER_TYPE, LETTER_DOMAIN = "信件", "letter"
# The kinds recall leaves out unless the request names their domain (breath(domain=…))
ASKED_ONLY = {FEEL_TYPE: FEEL_DOMAIN, LETTER_TYPE: LETTER_DOMAIN}
BUILTIN_TYPES = ("偏好", "事件", "规则", "承诺", "约定", HANDOFF_TYPE, "感受", "关系", "日常", FEEL_TYPE, LETTER_TYPE)


@dataclass
class Evidence:
    """Where a memory came from. No quote means 未确认: a quote is never invented."""

    from_session: str | None = None
    date: str | None = None  # Shanghai calendar day the words were said
    quote: str | None = None  # ≤ 2 sentences of the person's own words
    # the evidence of memories merged into this one ({"quote", "date", "from_session"}), oldest first
    earlier: list[dict] = field(default_factory=list)

    def own(self) -> dict:
        return {"quote": self.quote, "date": self.date, "from_session": self.from_session}

    @property
    def quotes(self) -> list[str]:
        """Every quote behind the memory, oldest first."""
        return [q["quote"] for q in self.earlier if q.get("quote")] + ([self.quote] if self.quote else [])

    @property
    def mark(self) -> str:
        return "".join(f"「{q}」" for q in self.quotes) if self.quote else UNCONFIRMED


@dataclass
class Memory:
    content: str
    title: str = ""
    type: str = "事件"
    tags: list[str] = field(default_factory=list)
    importance: int = 5
    pinned: bool = False
    valence: float = 0.5
    arousal: float = 0.3
    domain: str = ""
    event_date: str | None = None  # the day the thing happened (YYYY-MM-DD), if known
    created: str = ""
    last_active: str = ""
    activation_count: int = 0
    status: str = UNCONFIRMED
    archived: bool = False
    evidence: Evidence = field(default_factory=Evidence)
    # commitment arbitration: a replaced memory is kept, with a trace, but is no longer current
    superseded_by: str | None = None
    situation: str = ""  # the circumstance a coexisting memory holds in (有家人在时, 在家时)
    conflicts: list[str] = field(default_factory=list)  # ids it contradicts: recall shows the conflict
    trace: list[dict] = field(default_factory=list)  # at, action, other, quote, by
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    vectors: list[str] = field(default_factory=list)  # the encoders ("e5", "use") that have embedded it

    @property
    def has_vector(self) -> bool:
        return bool(self.vectors)

    @property
    def current(self) -> bool:
        return not self.archived and self.superseded_by is None

    @property
    def origin(self) -> dict | None:
        """Where an imported memory came from (its "imported" trace entry: by, path, original_id), or None."""
        return next((t for t in self.trace if t.get("action") == "imported"), None)

    @property
    def is_commitment(self) -> bool:
        return self.type in COMMITMENT_TYPES or any(t in COMMITMENT_TYPES for t in self.tags)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "Memory":
        data = dict(data)
        data["evidence"] = Evidence(**(data.get("evidence") or {}))
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})
