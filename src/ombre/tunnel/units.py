"""systemd user units for the two long-running processes (issue #17 item 3): `ombre serve` and
`ombre keeper run`, restarted on failure, logging to the journal (`journalctl --user -u ombre-serve`).

Install writes only files it can call its own (they carry MARK), and uninstall removes only those: a unit of
the same name that someone else wrote is refused on install and left alone on uninstall.
"""
from __future__ import annotations

import os
from pathlib import Path

from ..errors import UsageError
from ..files import replace_atomic
from ..inject.install import FileChange

MARK = "# Written by `ombre install service`; `ombre uninstall service` removes it."
# what the processes read from the environment, passed on to the units (secrets go in the EnvironmentFile)
PASSED_PREFIXES = ("OMBRE_", "AUTO_FORGE", "ASYNC_DISTILL", "CLAUDE_CONFIG_DIR")
SECRETS = ("OMBRE_TOKEN", "OMBRE_LLM_API_KEY")
UNITS = {
    "ombre-serve.service": ("Ombre memory service (hold / breath / MCP)", "serve"),
    "ombre-keeper.service": ("Ombre keeper: diet and forge by themselves at thresholds", "keeper run"),
}


def unit_dir(env: dict[str, str]) -> Path:
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME", str(Path.home()))) / ".config")
    return Path(base) / "systemd" / "user"


def unit_text(description: str, exe: Path, args: str, env: dict[str, str], workdir: Path, home: Path) -> str:
    passed = sorted((k, v) for k, v in env.items() if k.startswith(PASSED_PREFIXES) and k not in SECRETS)
    lines = [MARK, "[Unit]", f"Description={description}", "After=network.target", "", "[Service]",
             "Type=simple", f"WorkingDirectory={workdir}", f"ExecStart={exe} {args}",
             "Restart=on-failure", "RestartSec=10",
             # OMBRE_TOKEN or an API key, if used, belong in this file (mode 600), not in the unit
             f"EnvironmentFile=-{home / '.ombre' / 'service.env'}"]
    lines += [f'Environment="{k}={v}"' for k, v in passed]
    lines += ["", "[Install]", "WantedBy=default.target", ""]
    return "\n".join(lines)


def plan(*, install: bool, env: dict[str, str], exe: Path | None = None, workdir: Path | None = None) -> list[FileChange]:
    folder = unit_dir(env)
    home = Path(env.get("HOME", str(Path.home())))
    changes = []
    for name, (description, args) in UNITS.items():
        path = folder / name
        before = path.read_text(encoding="utf-8") if path.exists() else None
        ours = before is not None and before.startswith(MARK)
        if install:
            if before is not None and not ours:
                raise UsageError(f"{path} exists and was not written by ombre",
                                 hint="move it away (or remove it) and run `ombre install service` again")
            after = unit_text(description, exe or Path("ombre"), args, env, workdir or Path.cwd(), home)
        else:
            after = None if ours else before
        changes.append(FileChange(path, before, after, f"systemd user unit for `ombre {args}`"))
    return changes


def apply(changes: list[FileChange]) -> None:
    """Write or remove the units. No backups: only files that carry MARK are ever replaced or removed."""
    for change in changes:
        if change.after is None:
            change.path.unlink(missing_ok=True)
        else:
            change.path.parent.mkdir(parents=True, exist_ok=True)
            replace_atomic(change.path, change.after.encode("utf-8"))


def how_to_enable(names: list[str]) -> str:
    units = " ".join(names)
    return (f"enable them:   systemctl --user daemon-reload && systemctl --user enable --now {units}\n"
            f"logs:          journalctl --user -u ombre-serve -u ombre-keeper -f\n"
            f"keep running after logout: loginctl enable-linger {os.environ.get('USER', '$USER')}")
