"""Chinese-aware keyword terms: rjieba words plus character bigrams (DESIGN §5).

SQLite's trigram tokenizer misses one- and two-character Chinese terms, so the text is segmented here
and the terms are indexed space-separated in an ordinary FTS5 column.
"""
from __future__ import annotations

import re

import rjieba

_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]+")
_WORD = re.compile(r"\w")
# No stop list: on MemDaily it lost more than it gained (bench/recall_memdaily.py). In a large store the
# search itself drops terms that nearly every memory holds (SQLiteStore.keyword_search).


_SENTENCE = re.compile(r"[^。！？!?\n；;]+[。！？!?；;]?")


def sentences(text: str, min_chars: int = 2) -> list[str]:
    """Sentences as Chinese punctuation (and newlines) end them, each kept with its end mark."""
    return [s.strip() for s in _SENTENCE.findall(text) if len(s.strip()) >= min_chars]


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


_TOKEN = re.compile(r"[^\W_]+")


def token_count(terms: tuple[str, str]) -> int:
    """A memory's length as SQLite FTS5's unicode61 tokenizer counts it, for BM25 on another backend: a word
    such as 2024-04-11 is three tokens there, and each bigram one."""
    return len(_TOKEN.findall(terms[0])) + len(terms[1].split())


def query_terms(text: str, extra: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The terms a recall searches for: the query's own, then any added ones (emotion bias)."""
    return list(dict.fromkeys(terms(text) + [t for t in extra if t]))


def match_expression(chosen: list[str]) -> str:
    """An FTS5 MATCH expression: any of the terms, quoted so no term is read as FTS syntax."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in chosen)
