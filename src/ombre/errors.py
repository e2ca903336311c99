"""Ombre's errors: one base class, a few families, each saying what went wrong and what to do.

The CLI catches `OmbreError` once, prints `message` and `hint`, and exits non-zero.
"""

from __future__ import annotations

from pathlib import Path


class OmbreError(Exception):
    """Base class of every error Ombre raises on purpose."""

    exit_code = 1

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def to_dict(self) -> dict:
        return {"error": type(self).__name__, "message": self.message, "hint": self.hint}


class UsageError(OmbreError):
    """Options that contradict each other or cannot be read."""

    exit_code = 2


class SessionError(OmbreError):
    """A session that cannot be found, or a reference that matches more than one."""


class TranscriptError(OmbreError):
    """A transcript file that cannot be read as Claude Code writes it."""

    def __init__(self, message: str, *, path: Path | None = None, line: int | None = None, hint: str = "") -> None:
        where = f"{path}" if path else ""
        if line is not None:
            where += f":{line}"
        super().__init__(f"{where}: {message}" if where else message, hint=hint)
        self.path = path
        self.line = line


class LiveSessionError(TranscriptError):
    """The session file is being written right now (a turn is in flight)."""


class SelectionError(OmbreError):
    """A range, anchor, day or timestamp that does not resolve to conversation events."""

    def __init__(self, message: str, *, candidates: list[str] | None = None, hint: str = "") -> None:
        if candidates:
            message += "\n  candidates:\n" + "\n".join(f"    {c}" for c in candidates)
        super().__init__(message, hint=hint)
        self.candidates = candidates or []


class InvariantError(OmbreError):
    """A rewritten transcript broke a rule Claude Code relies on; nothing was put in place."""


class MemoryInputError(UsageError):
    """A hold or breath request whose fields are out of range or unknown."""


class DiskFullError(OmbreError):
    """A write found no room (ENOSPC, a quota, a file-size limit); what was being written was taken back."""


class StoreError(OmbreError):
    """The memory database could not be read or written."""


class BridgeError(OmbreError):
    """A bridge that could not be read, stopped, re-bound or started."""

    exit_code = 6
