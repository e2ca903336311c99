"""diet: the everyday slimming — squash tool payloads and images, keep nearly all dialogue.

No handoff is injected (diet is cleaning, not a narrative window swap), but like forge it writes a new
session id: Claude Code's process still holds the fat context until the bridge resumes the new file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..settings import Settings
from .forge import ForgeOptions, ForgeResult
from .forge import run as run_forge
from .select import Selector


@dataclass(frozen=True)
class DietOptions:
    retain: int = 150_000
    squash: int = 2_000
    dry_run: bool = False
    window: int = 200_000
    history: Path | None = None

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: object) -> "DietOptions":
        """Diet as the settings default it (AUTO_FORGE_DIET_RETAIN / _SQUASH, the window, the history log);
        an override of None keeps the default."""
        values: dict = {
            "retain": settings.diet_retain,
            "squash": settings.diet_squash,
            "window": settings.context_window,
            "history": settings.history_log,
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)


def run(path: Path, options: DietOptions) -> ForgeResult:
    return run_forge(
        path,
        ForgeOptions(
            selector=Selector(retain=options.retain),
            squash=options.squash,
            dry_run=options.dry_run,
            mode="diet",
            window=options.window,
            history=options.history,
        ),
    )
