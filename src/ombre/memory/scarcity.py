"""Scarcity: hard caps on pinned and on importance 10 / ≥ 9.

Past a cap, a manual write demotes the longest-inactive holder (the person asked for this one); an
automatic write is itself downgraded. Either way the result says which happened. Commitments are never
the ones demoted.
"""

from __future__ import annotations

from .model import Memory
from .store import MemoryStore


def enforce(
    store: MemoryStore, candidate: Memory, *, manual: bool, max_pinned: int, max_10: int, max_9: int
) -> list[str]:
    notes: list[str] = []
    if candidate.pinned and store.count(pinned=True) >= max_pinned:
        victim = store.least_active(pinned=True) if manual else None
        if victim is not None:
            victim.pinned = False
            store.update(victim)
            notes.append(f"置顶已满（{max_pinned}）：取消了最久未激活的 {victim.id} 的置顶")
        else:
            candidate.pinned = False
            notes.append(f"置顶已满（{max_pinned}）：这条不置顶")
    for level, cap in ((10, max_10), (9, max_9)):
        if candidate.importance >= level and store.count(min_importance=level) >= cap:
            victim = store.least_active(min_importance=level) if manual else None
            if victim is not None:
                victim.importance = level - 1
                store.update(victim)
                notes.append(f"重要度≥{level} 已满（{cap}）：把最久未激活的 {victim.id} 降为 {level - 1}")
            else:
                candidate.importance = level - 1
                notes.append(f"重要度≥{level} 已满（{cap}）：这条降为 {level - 1}")
    return notes
