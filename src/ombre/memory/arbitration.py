"""What commitment arbitration does to the store, whoever decided it (rules or a model).

A verdict on a new memory is one of: add, skip, overwrite, merge, coexist, contradiction. Overwrite and merge
keep the old memory, marked as replaced (`superseded_by`) so recall no longer shows it as current, with a
trace on both (when, what, the quote that caused it, who decided); coexist writes each memory's situation
into it; contradiction marks both, so recall shows the conflict instead of two truths.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass
from typing import Mapping

from ..clock import iso
from .embed import Embedder
from .fusion import retrieve
from .model import COMMITMENT_TYPES, UNCONFIRMED, Memory
from .query import Query
from .store import MemoryStore

ACTIONS = ("add", "skip", "overwrite", "merge", "coexist", "contradiction")
NEEDS_TARGET = ("skip", "overwrite", "merge", "coexist", "contradiction")
ARBITRATED_TYPES = (*COMMITMENT_TYPES, "规则")
MIN_IMPORTANCE = 8


@dataclass
class Verdict:
    action: str
    target: str | None = None  # the existing memory the action concerns
    situation: str = ""  # coexist: the new memory's situation
    old_situation: str = ""  # coexist: the old one's, if it had none written
    merged: str = ""  # merge: the combined content
    reason: str = ""
    by: str = "rules"

    def to_dict(self) -> dict:
        return asdict(self)


def needs_arbitration(m: Memory) -> bool:
    """Only commitments, agreements and rules, or anything of importance ≥ 8; chit-chat never."""
    return m.type in ARBITRATED_TYPES or m.is_commitment or m.importance >= MIN_IMPORTANCE


def compared_text(m: Memory) -> str:
    """What arbitration reads of a memory: its content and the person's words behind it."""
    return " ".join(x for x in (m.content, m.evidence.quote or "") if x)


def related(store: MemoryStore, encoders: Mapping[str, Embedder], m: Memory, k: int = 5) -> list[tuple[Memory, float]]:
    """The top-k current memories that arbitration compares a new one with, each with its raw e5 similarity
    (0 when e5 did not find it)."""
    fused = retrieve(store, Query.build(compared_text(m)), encoders=encoders)
    ids = sorted(fused, key=lambda i: -fused[i][0])[:20]
    found = store.get_many(ids)
    out = [
        (found[i], float(fused[i][1].get("similarity", 0.0)))
        for i in ids
        if i in found and i != m.id and found[i].current and needs_arbitration(found[i])
    ]
    return out[:k]


def prepare(verdict: Verdict, new: Memory, old: Memory | None = None) -> None:
    """Shape the new memory before it is written (`old`: the memory the verdict names)."""
    if verdict.action == "merge" and verdict.merged:
        new.content = verdict.merged
    if verdict.action == "merge" and old is not None:
        # the merged memory speaks for both: every quote behind it stays with it
        carried = old.evidence.earlier + ([old.evidence.own()] if old.evidence.quote else [])
        new.evidence.earlier = [q for q in carried if q.get("quote") != new.evidence.quote]
    elif verdict.action == "coexist":
        new.situation = verdict.situation
    elif verdict.action == "contradiction":
        new.status = UNCONFIRMED  # two exclusive truths: neither is confirmed by the newer one
        new.conflicts = [verdict.target] if verdict.target else []


def link(store: MemoryStore, verdict: Verdict, new: Memory, now: dt.datetime) -> None:
    """After the new memory is written: mark the old one and leave a trace on both."""
    if verdict.action not in NEEDS_TARGET or verdict.target is None:
        return
    old = store.get(verdict.target)
    if old is None:
        return
    stamp = iso(now)
    entry = {"at": stamp, "quote": new.evidence.quote, "by": verdict.by, "reason": verdict.reason}
    if verdict.action in ("overwrite", "merge"):
        old.superseded_by = new.id
        old.trace.append(
            {**entry, "action": "overwritten by" if verdict.action == "overwrite" else "merged into", "other": new.id}
        )
        disputed = list(old.conflicts) if verdict.action == "overwrite" else []
        clear_conflicts(store, old, f"被 {new.id} {'覆盖' if verdict.action == 'overwrite' else '合并'}", now)
        # a change of mind settles the dispute: what the old one contradicted is replaced by the new one too
        for other in store.get_many(disputed).values():
            if other.current and other.id != new.id:
                other.superseded_by = new.id
                other.trace.append(
                    {
                        **entry,
                        "action": "overwritten by",
                        "other": new.id,
                        "reason": f"与 {old.id} 的矛盾由改口解决：{verdict.reason}",
                    }
                )
                store.update(other)
    elif verdict.action == "coexist":
        old.situation = old.situation or verdict.old_situation or "其他情境"
        old.trace.append({**entry, "action": "coexists with", "other": new.id})
    elif verdict.action == "contradiction":
        old.conflicts = list(dict.fromkeys([*old.conflicts, new.id]))
        old.trace.append({**entry, "action": "contradicted by", "other": new.id})
    new.trace.append({**entry, "action": verdict.action, "other": old.id})
    store.update(old)
    store.update(new)


def clear_conflicts(store: MemoryStore, gone: Memory, why: str, now: dt.datetime) -> None:
    """`gone` no longer stands (overwritten, merged or archived), so the conflicts it was part of are over:
    the mark leaves both sides, and each side's trace says when and why. The caller saves `gone`."""
    if not gone.conflicts:
        return
    stamp = iso(now)
    for other_id in gone.conflicts:
        other = store.get(other_id)
        if other is None or gone.id not in other.conflicts:
            continue
        other.conflicts = [c for c in other.conflicts if c != gone.id]
        other.trace.append(
            {"at": stamp, "action": "conflict cleared", "other": gone.id, "by": "ombre", "reason": f"{gone.id} {why}"}
        )
        store.update(other)
    gone.trace.append(
        {"at": stamp, "action": "conflict cleared", "other": ",".join(gone.conflicts), "by": "ombre", "reason": why}
    )
    gone.conflicts = []
