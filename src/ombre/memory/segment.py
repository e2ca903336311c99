"""Chinese-aware keyword terms: rjieba words plus character bigrams (DESIGN §5).

SQLite's trigram tokenizer misses one- and two-character Chinese terms, so the text is segmented here
and the terms are indexed space-separated in an ordinary FTS5 column.
"""
from __future__ import annotations

import re

import rjieba

_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]+")
_WORD = re.compile(r"\w")
# Bigram matches count a quarter of a word match (bm25 column weight): they rescue queries whose words
# segment differently from the memory's, without drowning exact words. No stop list: on MemDaily it lost
# more than it gained (bench/recall_memdaily.py).
GRAM_WEIGHT = 0.25


def words(text: str) -> list[str]:
    return [w.lower() for w in rjieba.cut(text) if _WORD.search(w)]


def bigrams(text: str) -> list[str]:
    return [run[i:i + 2] for run in _CJK.findall(text) for i in range(len(run) - 1)]


def terms(text: str) -> list[str]:
    """Distinct search terms of `text`: segmented words and CJK character bigrams."""
    return list(dict.fromkeys(words(text) + bigrams(text)))


def document(text: str) -> tuple[str, str]:
    """The two indexed columns of a memory: its words, and its character bigrams."""
    return " ".join(words(text)), " ".join(bigrams(text))


def fts_query(text: str, extra: list[str] | None = None) -> str:
    """An FTS5 MATCH expression: any of the terms (quoted, so no term is read as FTS syntax)."""
    chosen = terms(text) + [t for t in (extra or []) if t]
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in dict.fromkeys(chosen))
