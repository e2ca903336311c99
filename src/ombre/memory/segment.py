"""Keyword terms for Chinese and English alike: rjieba words plus character bigrams, and for
Latin-script words their Snowball stem, without English function words.

SQLite's trigram tokenizer misses one- and two-character Chinese terms, so the text is segmented here
and the terms are indexed space-separated in an ordinary FTS5 column (and in PostgreSQL's tsvector from the
same columns): both stores index and search exactly these terms. An English question ("what's she allergic
to?") shares almost no surface words with the memory it asks for ("Ruby has a dairy allergy"), so "allergy"
and "allergic" must meet as one term and "what", "to", "she" must not outweigh them.
"""

from __future__ import annotations

import functools
import re

import rjieba
import Stemmer

_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]+")
_WORD = re.compile(r"\w")
# No stop list: on MemDaily it lost more than it gained (bench/recall_memdaily.py). In a large store the
# search itself drops terms that nearly every memory holds (SQLiteStore.keyword_search).


_SENTENCE = re.compile(r"[^。！？!?\n；;]+[。！？!?；;]?")


def script(text: str) -> str:
    """ "latin" when a text is written mostly in Latin letters (an English question), else "cjk". A Latin
    word takes about five letters where Chinese takes one or two characters: "我想学Python" is Chinese."""
    cjk = sum(len(run) for run in _CJK.findall(text))
    latin = sum(len(run) for run in _LATIN.findall(text.lower()))
    return "latin" if latin > 4 * cjk else "cjk"


def sentences(text: str, min_chars: int = 2) -> list[str]:
    """Sentences as Chinese punctuation (and newlines) end them, each kept with its end mark."""
    return [s.strip() for s in _SENTENCE.findall(text) if len(s.strip()) >= min_chars]


def words(text: str) -> list[str]:
    """The text's words as a person reads them (lower-cased), for what is shown or compared as words."""
    return [w.lower() for w in rjieba.cut(text) if _WORD.search(w)]


_LATIN = re.compile(r"[a-z]+")
# English function words and chat filler: in a question they outnumber the words it is about
STOP = frozenset(
    """a an the and or but if then else of at by for with about against between into through during
before after above below to from up down in out on off over under again further once here there when where why how
all any both each few more most other some such no nor not only own same so than too very can will just should now
i me my mine myself we us our ours ourselves you your yours yourself yourselves he him his himself she her hers
herself it its itself they them their theirs themselves what which who whom whose this that these those am is are
was were be been being have has had having do does did doing would could ought shall may might must im ive id ill
youre youve youll hes shes its were theyre dont didnt doesnt isnt wasnt arent werent cant wont couldnt wouldnt
shouldnt havent hasnt hadnt don isn aren wasn weren doesn didn couldn wouldn shouldn haven hasn hadn
lol lmao omg ok okay oh ah um uh hey hi yeah yes yep nope pls please thanks thx u ur
again also still even really just gonna wanna gotta""".split()
)


@functools.lru_cache(maxsize=1)
def _stemmer() -> "Stemmer.Stemmer":
    return Stemmer.Stemmer("english")


# rjieba keeps a Latin word joined by a hyphen or a dot whole ("20-mile", "mid-June", "Wi-Fi"): its parts are
# the words a person searches for, and SQLite's FTS5 reads such a term as a phrase of its parts anyway
_PART = re.compile(r"[^\W_]+")


def keys(text: str) -> list[str]:
    """The words a keyword index holds and a search looks for: CJK words as segmented, numbers as written,
    Latin-script words stemmed (allergy, allergies → allergi) with English function words left out, and a
    Latin word joined by a hyphen or a dot read as its parts (mid-June → mid, june)."""
    out = []
    for w in rjieba.cut(text):
        if not _WORD.search(w):
            continue
        w = w.lower()
        for part in _PART.findall(w) if _LATIN.search(w) else (w,):
            if _LATIN.fullmatch(part):
                if len(part) < 2 or part in STOP:
                    continue
                part = _stemmer().stemWord(part)
            out.append(part)
    return out


def bigrams(text: str) -> list[str]:
    return [run[i : i + 2] for run in _CJK.findall(text) for i in range(len(run) - 1)]


def terms(text: str) -> list[str]:
    """Distinct search terms of `text`: its keys (segmented words, English stems) and CJK character bigrams."""
    return list(dict.fromkeys(keys(text) + bigrams(text)))


def document(text: str) -> tuple[str, str]:
    """The two indexed columns of a memory: its keys, and its character bigrams."""
    return " ".join(keys(text)), " ".join(bigrams(text))


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
