"""Come over from Ombre-Brain: its vault (the buckets folder) or its export zip, read as it documents them.

Ombre-Brain keeps each memory ("bucket") as a Markdown file: YAML frontmatter, the memory's text as the body,
filed by kind — `dynamic/<domain>/` (ordinary, decaying), `permanent/` (pinned), `feel/` (the model's own
reflections), `plans/<status>/`, `letters/history/`, `archive/` — with the original words it came from in
`_sources/src_<sha256>.source` (its export zip: `buckets/…`, `sources/…` and a `backup_manifest.json` of every
file's size and SHA-256). Each bucket becomes one of our memories with its meaning kept:

- a plan is a 承诺 (an open one never decays; a resolved or abandoned one is archived, its status in the trace);
- a permanent or pinned bucket is pinned while our cap allows, the rest kept at importance 10 (listed);
- a feel is a 沉淀, which plain breath does not surface (as there: only breath(domain="feel") does);
- a letter is a 信件, its text kept verbatim whatever its length;
- an archived bucket is archived; one the person deleted there (a tombstone) is not brought back;
- any other bucket is a 偏好 or an 事件, by what it says.

Valence, arousal (0–1) and importance (1–10) are on our scales already; domains and tags are kept, the
times too (a time without a zone is Shanghai time, as Ombre-Brain's older files wrote them). The original id
and file stay in the trace. A quote comes only from a source file whose SHA-256 matches its name: without
one a memory stays 未确认, never quoted from its own body.

The source is only read. Every file that cannot be imported is refused by name with the reason — a path
that escapes the folder, a symbolic link, an oversized file, bad UTF-8, broken frontmatter, a zip member that
does not match its manifest — and the rest still import, in one transaction. A memory's id is derived from
the original id and the body's hash, so a second run adds nothing.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import hashlib
import math
import os
import re
import stat
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import yaml

from .. import wire
from ..clock import SHANGHAI, iso, now_utc, shanghai_date
from ..errors import MemoryInputError
from ..memory.hold import enrich_pending
from ..memory.model import (
    CONFIRMED,
    FEEL_DOMAIN,
    FEEL_TYPE,
    LETTER_DOMAIN,
    LETTER_TYPE,
    UNCONFIRMED,
    Evidence,
    Memory,
)
from ..memory.query import PERSON_ROLES, speaker_tag
from ..memory.rows import terms_of
from ..memory.service import MemoryService
from ..memory.store import NewRow
from .distill_rules import judge

SOURCE = "ombre-brain"
MAX_BUCKET_BYTES = 1 << 20  # a memory of a megabyte is not a memory (Ombre-Brain's largest are letters)
MAX_SOURCE_BYTES = 10 << 20  # Ombre-Brain's own cap on a source file
MAX_MEMBERS = 200_000  # zip entries read at most: past this it is not an export
MANIFEST = "backup_manifest.json"
MAX_MANIFEST_BYTES = 64 << 20  # a line of path, size and hash per file: about 200 bytes for each of MAX_MEMBERS
MAX_ACTIVATIONS = 2**31 - 1  # a store's INTEGER column: one absurd count must not sink the whole transaction
MAX_QUOTED_LINES = 2_000  # lines of a source read for one bucket's quote, whatever its ranges say
_SOURCE_NAME = re.compile(r"src_([0-9a-f]{64})\.source")
_SENTENCE = re.compile(r"[^。！？!?；;\n]+[。！？!?；;]*")
_SYSTEM_TAG = re.compile(r"^__\w+__$")
_KINDS = ("dynamic", "permanent", "feel", "plans", "letters", "archive")


@dataclass
class Refusal:
    path: str
    reason: str


@dataclass
class Vault:
    """What was read: bucket files by their path under the buckets folder, verified source texts by ref."""

    buckets: dict[str, bytes] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    shown: dict[str, str] = field(default_factory=dict)  # a bucket's name in a zip, where it is not its path
    refused: list[Refusal] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    other_files: int = 0  # files that are not memories (Ombre-Brain's own database, media, locks)


@dataclass
class Planned:
    memory: Memory
    path: str
    origin: str  # the bucket's kind there: dynamic, permanent, feel, plans, letters, archive


@dataclass
class BrainImport:
    """What an import did (or, dry, would do)."""

    source: str
    dry_run: bool
    added: int = 0
    by_type: dict[str, int] = field(default_factory=dict)
    by_origin: dict[str, int] = field(default_factory=dict)
    pinned: list[str] = field(default_factory=list)  # titles pinned
    kept_at_10: list[str] = field(default_factory=list)  # pinned there, past our cap here: importance 10
    archived: list[tuple[str, str]] = field(default_factory=list)  # (path, why)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why): already here, deleted there
    refused: list[tuple[str, str]] = field(default_factory=list)  # (path, why)
    quoted: int = 0  # memories whose quote came from a source file
    unconfirmed: int = 0  # memories left 未确认 (no source file, or one that does not match its name)
    zoneless: int = 0  # memories with a time without a zone, read as Asia/Shanghai
    sealed: list[tuple[str, str]] = field(default_factory=list)  # (path, why): letters locked there
    embedded: int = 0
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items()}


# -- reading ---------------------------------------------------------------------------------------------


def read_vault(path: Path) -> Vault:
    """The buckets and sources of a vault folder (the buckets folder itself, or a folder holding `buckets/`)
    or of an export zip; every file that cannot be read is refused by name, the rest are read."""
    if path.is_symlink():
        raise MemoryInputError(f"{path} is a symbolic link", hint="give the folder or zip it points to")
    if path.is_dir():
        return _read_folder(path)
    if path.is_file() and zipfile.is_zipfile(path):
        return _read_zip(path)
    raise MemoryInputError(
        f"{path} is neither an Ombre-Brain buckets folder nor its export zip",
        hint="give the folder that holds dynamic/, permanent/, plans/… or the zip from Ombre-Brain's export",
    )


def _read_folder(root: Path) -> Vault:
    vault = Vault()
    if (root / "buckets").is_symlink():
        raise MemoryInputError(f"{root / 'buckets'} is a symbolic link", hint="give the folder it points to")
    buckets = root / "buckets" if (root / "buckets").is_dir() else root
    if not any((buckets / kind).is_dir() for kind in _KINDS):
        raise MemoryInputError(
            f"{root} holds none of Ombre-Brain's folders ({', '.join(_KINDS)})",
            hint="give the buckets folder of an Ombre-Brain vault, or its export zip",
        )
    for rel, full in _walk(buckets, vault):
        if rel.startswith("_sources/"):
            _add_source(vault, rel, functools.partial(_read_capped, full, MAX_SOURCE_BYTES))
        elif rel.endswith(".md") and not rel.startswith(("_", ".")):
            _add_bucket(vault, rel, functools.partial(_read_capped, full, MAX_BUCKET_BYTES))
        else:
            vault.other_files += 1
    for extra in (root / "sources", root / "_sources"):  # an unzipped export keeps them beside buckets/
        if extra.is_dir() and extra != buckets / "_sources" and not extra.is_symlink():
            for rel, full in _walk(extra, vault):
                _add_source(vault, rel, functools.partial(_read_capped, full, MAX_SOURCE_BYTES))
    return vault


def _walk(top: Path, vault: Vault) -> Iterator[tuple[str, Path]]:
    """Every regular file under `top`, by its posix path relative to it; links are refused, never followed."""
    for folder, dirs, files in os.walk(top, followlinks=False):
        here = Path(folder)
        for name in sorted(dirs):
            if (here / name).is_symlink():
                vault.refused.append(Refusal(_rel(here / name, top), "a symbolic link (not followed)"))
        dirs[:] = sorted(d for d in dirs if not (here / d).is_symlink() and not d.startswith("."))
        for name in sorted(files):
            full = here / name
            mode = full.lstat().st_mode
            if stat.S_ISLNK(mode):
                vault.refused.append(Refusal(_rel(full, top), "a symbolic link (not followed)"))
            elif stat.S_ISREG(mode):
                yield _rel(full, top), full


def _rel(path: Path, top: Path) -> str:
    return path.relative_to(top).as_posix()


def _read_capped(path: Path, cap: int) -> bytes:
    with open(path, "rb") as f:
        data = f.read(cap + 1)
    if len(data) > cap:
        raise _TooBig(cap)
    return data


class _TooBig(Exception):
    def __init__(self, cap: int) -> None:
        super().__init__(f"over {cap >> 20} MB: not read")


class _Unreadable(Exception):
    """A zip member that cannot be read: a bad CRC, encryption, a compression zipfile lacks, a broken stream."""


def _add_bucket(vault: Vault, rel: str, read: Callable[[], bytes], shown: str | None = None) -> None:
    try:
        vault.buckets[rel] = read()
    except (_TooBig, _Unreadable, OSError) as exc:
        vault.refused.append(Refusal(shown or rel, str(exc)))
        return
    if shown:
        vault.shown[rel] = shown


def _add_source(vault: Vault, rel: str, read: Callable[[], bytes]) -> None:
    m = _SOURCE_NAME.fullmatch(PurePosixPath(rel).name)
    if not m:
        vault.other_files += 1
        return
    try:
        data = read()
    except (_TooBig, _Unreadable, OSError) as exc:
        vault.refused.append(Refusal(rel, str(exc)))
        return
    if hashlib.sha256(data).hexdigest() != m.group(1):
        vault.refused.append(Refusal(rel, "its SHA-256 is not the one its name says: not used as evidence"))
        return
    try:
        vault.sources[f"src_{m.group(1)}"] = data.decode("utf-8")
    except UnicodeDecodeError:
        vault.refused.append(Refusal(rel, "not UTF-8 text"))


def _read_zip(path: Path) -> Vault:
    vault = Vault()
    with zipfile.ZipFile(path) as zf:
        members = zf.infolist()
        if len(members) > MAX_MEMBERS:
            raise MemoryInputError(
                f"{path} has {len(members):,} entries, more than an export holds",
                hint="give Ombre-Brain's own export zip",
            )
        manifest = _manifest(zf, vault)
        listed = set()
        for info in members:
            name = info.filename
            if info.is_dir() or name == MANIFEST:
                continue
            listed.add(name)
            why = _unsafe_member(info)
            if why:
                vault.refused.append(Refusal(name, why))
                continue
            is_source = name.startswith(("sources/", "buckets/_sources/"))
            is_bucket = (
                name.startswith("buckets/")
                and name.endswith(".md")
                and not is_source
                and not name[len("buckets/") :].startswith(("_", "."))
            )
            if not (is_source or is_bucket):
                vault.other_files += 1
                continue
            cap = MAX_SOURCE_BYTES if is_source else MAX_BUCKET_BYTES

            def read(info=info, cap=cap) -> bytes:
                if info.file_size > cap:
                    raise _TooBig(cap)
                try:
                    with zf.open(info) as f:
                        data = f.read(cap + 1)  # the header's size is the zip's word: read no more than the cap
                except (zipfile.BadZipFile, RuntimeError, NotImplementedError, zlib.error, EOFError) as exc:
                    raise _Unreadable(f"cannot be read from the zip ({exc})") from None
                if len(data) > cap:
                    raise _TooBig(cap)
                if manifest is not None:
                    _check_listed(manifest, info.filename, data)
                return data

            try:
                if is_source:
                    _add_source(vault, name, read)
                else:
                    _add_bucket(vault, name[len("buckets/") :], read, shown=name)
            except _Mismatch as exc:
                vault.refused.append(Refusal(name, str(exc)))
        if manifest is not None:
            for missing in sorted(set(manifest) - listed - {MANIFEST}):
                if missing.startswith(("buckets/", "sources/")):
                    vault.refused.append(Refusal(missing, "listed in the manifest but not in the zip"))
    return vault


class _Mismatch(Exception):
    pass


def _manifest(zf: zipfile.ZipFile, vault: Vault) -> dict[str, dict] | None:
    try:
        info = zf.getinfo(MANIFEST)
    except KeyError:
        vault.notes.append(f"the zip has no {MANIFEST}: its files could not be checked against one")
        return None
    try:
        with zf.open(info) as f:
            raw = f.read(MAX_MANIFEST_BYTES + 1)
        if len(raw) > MAX_MANIFEST_BYTES:
            raise ValueError(f"over {MAX_MANIFEST_BYTES >> 20} MB: no export's is")
        data = wire.loads(raw.decode("utf-8"), MANIFEST)  # its nesting bounded, as every JSON from outside
        return {f["path"]: f for f in data["files"] if isinstance(f, dict) and isinstance(f.get("path"), str)}
    except (
        zipfile.BadZipFile,
        RuntimeError,
        NotImplementedError,
        zlib.error,
        EOFError,
        ValueError,
        KeyError,
        TypeError,
    ) as exc:  # UnicodeDecodeError is a ValueError
        raise MemoryInputError(
            f"the zip's {MANIFEST} cannot be read ({exc})", hint="export again from Ombre-Brain; nothing was imported"
        ) from None


def _check_listed(manifest: dict[str, dict], name: str, data: bytes) -> None:
    entry = manifest.get(name)
    if entry is None:
        raise _Mismatch(f"not listed in {MANIFEST}")
    if entry.get("size") != len(data) or entry.get("sha256") != hashlib.sha256(data).hexdigest():
        raise _Mismatch(f"does not match {MANIFEST} (size or SHA-256 differ): changed after the export")


def _unsafe_member(info: zipfile.ZipInfo) -> str | None:
    name = info.filename
    parts = PurePosixPath(name).parts
    if name.startswith("/") or "\\" in name or ".." in parts or re.match(r"^[A-Za-z]:", name):
        return "a path that leaves the export's folder"
    if stat.S_ISLNK(info.external_attr >> 16):
        return "a symbolic link (not followed)"
    return None


# -- one bucket ------------------------------------------------------------------------------------------


@dataclass
class Bucket:
    path: str
    front: dict
    body: str

    @property
    def origin(self) -> str:
        head = self.path.split("/", 1)[0]
        return head if head in _KINDS else "dynamic"


def parse_bucket(path: str, raw: bytes) -> Bucket:
    """A bucket file's frontmatter and body; MemoryInputError names what is wrong with it."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MemoryInputError(f"not UTF-8 text (byte {exc.start})") from None
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")
    if not text.startswith("---\n"):
        raise MemoryInputError("no frontmatter: the file does not start with a --- line")
    end = re.search(r"^---[ \t]*$", text[4:], re.MULTILINE)
    if end is None:
        raise MemoryInputError("broken frontmatter: no closing --- line")
    try:
        front = yaml.safe_load(text[4 : 4 + end.start()])
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark is not None else ""
        raise MemoryInputError(f"broken frontmatter{where}: {getattr(exc, 'problem', None) or exc}") from None
    if not isinstance(front, dict):
        raise MemoryInputError("broken frontmatter: not a set of fields")
    body = text[4 + end.end() :].strip()
    if not body:
        raise MemoryInputError("the memory has no text")
    return Bucket(path, front, body)


def _unit(value: object, default: float) -> float:
    """Valence and arousal: 0–1 there as here; older files wrote "V0.9"."""
    if isinstance(value, str):
        value = value.strip().lstrip("VvAa")
    if not isinstance(value, (str, int, float)) or isinstance(value, bool):
        return default
    try:
        number = float(value)
    except ValueError:
        return default
    return default if math.isnan(number) else min(1.0, max(0.0, number))


def _time(value: object) -> tuple[str | None, bool]:
    """An ISO time (or the datetime YAML made of one) in our form, and whether it had no zone."""
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        value = dt.datetime.combine(value, dt.time())
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return None, False
    if not isinstance(value, dt.datetime):
        return None, False
    zoneless = value.tzinfo is None
    try:
        return iso(value.replace(tzinfo=SHANGHAI) if zoneless else value), zoneless
    except (OverflowError, ValueError):  # a placeholder such as 0001-01-01 has no UTC form: no time
        return None, False


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value.strip()] if value.strip() else []
    if isinstance(value, list):
        return [str(v).strip() for v in value if isinstance(v, (str, int, float)) and str(v).strip()]
    return []


def _kind_by_content(text: str) -> str:
    """An ordinary bucket is a preference when a clause of it reads as one to the distiller, else an event."""
    for clause in _SENTENCE.findall(text[:2_000]):
        kept = judge(clause.strip())
        if kept is not None and kept.kind == "偏好":
            return "偏好"
    return "事件"


def _quote(bucket: Bucket, sources: dict[str, str]) -> str | None:
    """The person's words behind the bucket, verbatim from its source file: the one or two sentences of the
    referenced lines that share the most with the memory (our quotes are at most two sentences)."""
    for ref in _refs(bucket.front):
        name, ranges = ref.get("ref"), ref.get("ranges")
        text = sources.get(name) if isinstance(name, str) else None
        if text is None:
            continue
        lines = text.splitlines()
        spans = ranges if isinstance(ranges, list) and ranges else [[1, len(lines)]]
        wanted: set[int] = set()  # line numbers, each once, however the ranges overlap
        for span in spans:
            if isinstance(span, list) and len(span) == 2 and all(type(n) is int for n in span):
                wanted.update(range(max(0, span[0] - 1), min(len(lines), span[1], span[0] - 1 + MAX_QUOTED_LINES)))
            if len(wanted) >= MAX_QUOTED_LINES:
                break
        picked = [lines[i] for i in sorted(wanted)[:MAX_QUOTED_LINES]]
        # one sentence, or two side by side in one line: a quote is a stretch of the text as it stands
        groups = [
            found[i : i + n]
            for line in picked
            for found in [_SENTENCE.findall(_persons(line))]
            for n in (1, 2)
            for i in range(len(found) - n + 1)
        ]
        groups = [g for g in groups if "".join(g).strip()]
        if not groups:
            continue
        body = set(_pairs(bucket.body))
        best = max(groups, key=lambda group: (len(body & set(_pairs("".join(group)))), -len(group)))
        quote = "".join(best).strip()
        if len(quote) <= 300 and quote in text:  # our quotes' bound: past it no quote, the memory 未确认
            return quote
    return None


def _persons(line: str) -> str:
    """A source line's words when they are the person's: a line the companion said is no quote of theirs."""
    tag, words = speaker_tag(line)
    return words if tag is None or tag in PERSON_ROLES else ""


def _pairs(text: str) -> list[str]:
    chars = [c for c in text if c.isalnum()]
    return [a + b for a, b in zip(chars, chars[1:])]


def _refs(front: dict) -> list[dict]:
    refs = front.get("source_refs") or [
        r for r in front.get("source_links") or [] if isinstance(r, dict) and r.get("status", "active") == "active"
    ]
    return [r for r in refs if isinstance(r, dict)] if isinstance(refs, list) else []


def _sealed_until(front: dict, now: dt.datetime) -> str | None:
    """When a letter locked there opens ("never" for a permanent lock), or None when it is open."""
    lock = str(front.get("lock_type") or "none").lower()
    if lock == "permanent":
        return "never"
    if lock != "timed":
        return None
    opens, _ = _time(front.get("unlock_date"))
    if not opens or opens <= iso(now):
        return None
    return shanghai_date(dt.datetime.fromisoformat(opens))  # the day as it was written there


def memory_id(original: str, body: str) -> str:
    """Ours for a bucket: the same original id and text give the same memory, so a second run adds nothing."""
    digest = hashlib.sha256(body.encode("utf-8")).hexdigest()
    return hashlib.sha256(f"{SOURCE}\0{original}\0{digest}".encode()).hexdigest()[:12]


def to_memory(
    bucket: Bucket, sources: dict[str, str], now: dt.datetime, max_chars: int
) -> tuple[Memory | None, str, bool]:
    """The memory a bucket becomes (None: not brought over), why it is archived or skipped, and whether one
    of its times had no zone. A body over our length limit is refused, except a letter's (kept verbatim)."""
    f, origin = bucket.front, bucket.origin
    kind_there = str(f.get("type") or "").lower()
    if f.get("tombstone") or f.get("deleted_at"):
        return None, "deleted in Ombre-Brain (a tombstone): not brought back", False
    original = str(f.get("id") or PurePosixPath(bucket.path).stem.rsplit("_", 1)[-1])
    created, zoneless_c = _time(f.get("created"))
    active, zoneless_a = _time(f.get("last_active"))
    stamp = iso(now)
    created = created or active or stamp
    domains = _strings(f.get("domain"))
    tags = [t for t in _strings(f.get("tags")) if not _SYSTEM_TAG.match(t)]
    importance = f.get("importance")
    importance = (
        int(importance)
        if isinstance(importance, (int, float)) and not isinstance(importance, bool) and math.isfinite(importance)
        else 5
    )
    wire.check([bucket.body, f.get("title"), domains, tags], "the bucket")
    m = Memory(
        content=bucket.body,
        title=str(f.get("title") or "").strip()[:120],
        importance=min(10, max(1, importance)),
        valence=_unit(f.get("valence"), 0.5),
        arousal=_unit(f.get("arousal"), 0.3),
        domain=domains[0] if domains else "",
        tags=list(dict.fromkeys(tags + domains[1:])),
        created=created,
        last_active=active or created,
        activation_count=min(MAX_ACTIVATIONS, max(0, int(f["activation_count"])))
        if isinstance(f.get("activation_count"), (int, float)) and math.isfinite(f["activation_count"])
        else 0,
        id=memory_id(original, bucket.body),
    )
    why = ""
    if origin == "plans" or kind_there == "plan":
        m.type = "承诺"
        folder = bucket.path.split("/")[1] if origin == "plans" and bucket.path.count("/") >= 2 else ""
        status = str(f.get("status") or folder).lower()
        if status in ("resolved", "abandoned"):
            m.archived, why = True, f"a plan {status} there"
    elif origin == "letters" or kind_there == "letter":
        m.type, m.domain = LETTER_TYPE, LETTER_DOMAIN
        sealed = _sealed_until(f, now)
        if sealed:
            why = f"a letter sealed there until {sealed}"
    elif origin == "feel" or kind_there == "feel":
        m.type, m.domain = FEEL_TYPE, FEEL_DOMAIN
    else:
        m.type = _kind_by_content(bucket.body)
        m.pinned = origin == "permanent" or kind_there == "permanent" or bool(f.get("pinned") or f.get("protected"))
        if m.pinned:
            m.importance = 10
    if origin == "archive" or kind_there == "archived":
        m.archived, m.pinned, why = True, False, why or "archived there"
    if m.type != LETTER_TYPE and len(m.content) > max_chars:
        raise MemoryInputError(
            f"the text is {len(m.content):,} characters, over the limit of {max_chars:,}",
            hint="raise OMBRE_MAX_CONTENT_CHARS and import again (the rest is in already)",
        )
    quote = _quote(bucket, sources)
    m.evidence = Evidence(
        from_session=None, date=shanghai_date(dt.datetime.fromisoformat(created)) if quote else None, quote=quote
    )
    m.status = CONFIRMED if quote else UNCONFIRMED
    m.trace = [
        {
            "at": stamp,
            "action": "imported",
            "other": "",
            "by": SOURCE,
            "path": bucket.path,
            "original_id": original,
            "reason": f"Ombre-Brain {origin}" + (f", {why}" if why else ""),
        }
    ]
    return m, why, zoneless_c or zoneless_a


# -- the import ------------------------------------------------------------------------------------------


def import_vault(
    service: MemoryService,
    path: Path,
    *,
    dry_run: bool = False,
    now: dt.datetime | None = None,
    progress: Callable[[str, int], None] | None = None,
) -> BrainImport:
    """Bring a vault's memories in (or, dry, say what would come in): one transaction, then their vectors."""
    now = now or now_utc()
    vault = read_vault(path)
    report = BrainImport(source=str(path), dry_run=dry_run, notes=list(vault.notes))
    report.refused = [(r.path, r.reason) for r in vault.refused]
    planned: list[Planned] = []
    for rel in sorted(vault.buckets):
        try:
            bucket = parse_bucket(rel, vault.buckets[rel])
            memory, why, zoneless = to_memory(bucket, vault.sources, now, service.settings.max_content_chars)
        except MemoryInputError as exc:
            report.refused.append((vault.shown.get(rel, rel), exc.message))
            continue
        if memory is None:
            report.skipped.append((rel, why))
            continue
        report.zoneless += zoneless
        if memory.archived:
            report.archived.append((rel, why))
        elif why:
            report.sealed.append((rel, why))
        planned.append(Planned(memory, rel, bucket.origin))
    # what is already there, the pinned cap and the write under the store's hold lock: a hold beside the
    # import cannot pass the cap between the count and the write
    with contextlib.nullcontext() if dry_run else service.store.exclusive():
        present = service.store.get_many([p.memory.id for p in planned])
        fresh: list[Planned] = []
        seen: set[str] = set()
        for p in planned:
            if p.memory.id in present or p.memory.id in seen:
                report.skipped.append((p.path, "already imported"))
                continue
            seen.add(p.memory.id)
            fresh.append(p)
        _pin_within_cap(service, fresh, report)
        for p in fresh:
            m = p.memory
            report.by_type[m.type] = report.by_type.get(m.type, 0) + 1
            report.by_origin[p.origin] = report.by_origin.get(p.origin, 0) + 1
            report.quoted += m.evidence.quote is not None
            report.unconfirmed += m.evidence.quote is None
        report.archived = [a for a in report.archived if a[0] in {p.path for p in fresh}]
        report.sealed = [a for a in report.sealed if a[0] in {p.path for p in fresh}]
        if report.zoneless:
            report.notes.append(
                f"{report.zoneless} {'memory' if report.zoneless == 1 else 'memories'} had a time "
                "without a zone: read as Asia/Shanghai"
            )
        if not dry_run and fresh:
            rows: list[NewRow] = [(p.memory, terms_of(p.memory), None) for p in fresh]
            service.store.add_many(rows)  # one transaction: what was accepted goes in whole, or not at all
            report.added = len(fresh)
    if report.added:  # the vectors after the lock: a hold beside a large import need not wait for them
        report.embedded = enrich_pending(service.store, service.encoders, progress=progress)
    return report


def _pin_within_cap(service: MemoryService, fresh: list[Planned], report: BrainImport) -> None:
    """Pinned there: pinned here while our cap allows (the most activated first), the rest importance 10."""
    wanted = sorted((p for p in fresh if p.memory.pinned), key=lambda p: p.memory.last_active, reverse=True)
    wanted.sort(key=lambda p: -p.memory.activation_count)  # stable: the most recent first among equals
    room = max(0, service.settings.max_pinned - service.store.count(pinned=True))
    for n, p in enumerate(wanted):
        label = p.memory.title or p.memory.content[:30]
        if n < room:
            report.pinned.append(label)
        else:
            p.memory.pinned = False
            report.kept_at_10.append(label)
