"""Chinese-aware keyword terms: rjieba words plus character bigrams (DESIGN §5).

SQLite's trigram tokenizer misses one- and two-character Chinese terms, so the text is segmented here
and the terms are indexed space-separated in an ordinary FTS5 column.
"""
from __future__ import annotations

import re

import rjieba

_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]+")
_WORD = re.compile(r"[0-9A-Za-z\u3400-\u9fff\uf900-\ufaff]")
# Function words that match everything and rank nothing.
_STOP = frozenset("的 了 是 我 你 他 她 它 们 在 和 与 就 都 也 吗 呢 吧 啊 呀 哦 嗯 这 那 有 不 个 一 很 还 要 会 对 说 到 着 过 给"
                  " 么 什么 怎么 一个 没有 我们 你们 他们 她们 自己 这个 那个 the a an to of and or is are".split())


def terms(text: str) -> list[str]:
    """Distinct search terms of `text`: segmented words (no stop words) and CJK character bigrams."""
    out: list[str] = []
    seen: set[str] = set()

    def add(term: str) -> None:
        term = term.lower()
        if term and term not in seen and term not in _STOP and _WORD.search(term):
            seen.add(term)
            out.append(term)

    for word in rjieba.cut(text):
        add(word.strip())
    for run in _CJK.findall(text):
        for i in range(len(run) - 1):
            add(run[i:i + 2])
    return out


def fts_document(text: str) -> str:
    return " ".join(terms(text))


def fts_query(text: str, extra: list[str] | None = None) -> str:
    """An FTS5 MATCH expression: any of the terms (quoted, so no term is read as FTS syntax)."""
    chosen = terms(text) + [t for t in (extra or []) if t]
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in dict.fromkeys(chosen))
