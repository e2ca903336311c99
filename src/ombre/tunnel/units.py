"""systemd user units for the two long-running processes: `ombre serve` and
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
from ..settings import SETTINGS_FILE, env_pair, parse_env

MARK = "# Written by `ombre install service`; `ombre uninstall service` removes it."
# what the processes read from the environment. Where to find things stays in the unit; every other setting
# goes to OMBRE_HOME/service.env, which the CLI and the hooks read too (so the dashboard and the CLI agree),
# secrets included only when the person puts them there (the file is mode 600; install never copies them)
PASSED_PREFIXES = ("OMBRE_", "AUTO_FORGE", "ASYNC_DISTILL", "CLAUDE_CONFIG_DIR")
IN_UNIT = ("OMBRE_HOME", "CLAUDE_CONFIG_DIR")
SECRETS = ("OMBRE_TOKEN", "OMBRE_LLM_API_KEY")
UNITS = {
    "ombre-serve.service": ("Ombre memory service (hold / breath / MCP)", "serve"),
    "ombre-keeper.service": ("Ombre keeper: diet and forge by themselves at thresholds", "keeper run"),
}


def unit_dir(env: dict[str, str]) -> Path:
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME", str(Path.home()))) / ".config")
    return Path(base) / "systemd" / "user"


def settings_file(env: dict[str, str]) -> Path:
    home = Path(env.get("HOME", str(Path.home())))
    folder = Path(env["OMBRE_HOME"]).expanduser() if env.get("OMBRE_HOME") else home / ".ombre"
    return folder / SETTINGS_FILE


def unit_text(description: str, exe: Path, args: str, env: dict[str, str], workdir: Path) -> str:
    passed = sorted((k, v) for k, v in env.items() if k in IN_UNIT)
    lines = [
        MARK,
        "[Unit]",
        f"Description={description}",
        "After=network.target",
        "",
        "[Service]",
        "Type=simple",
        f"WorkingDirectory={workdir}",
        f"ExecStart={exe} {args}",
        "Restart=on-failure",
        "RestartSec=10",
        f"EnvironmentFile=-{settings_file(env)}",
    ]
    lines += [f'Environment="{k}={v}"' for k, v in passed]
    lines += ["", "[Install]", "WantedBy=default.target", ""]
    return "\n".join(lines)


def _settings_change(env: dict[str, str]) -> FileChange:
    """This shell's settings into service.env: a key set here replaces the file's line, every other line stays."""
    path = settings_file(env)
    before = path.read_text(encoding="utf-8") if path.exists() else None
    wanted = {k: v for k, v in env.items() if k.startswith(PASSED_PREFIXES) and k not in SECRETS + IN_UNIT}
    present = parse_env(before or "")
    changed = {k: v for k, v in wanted.items() if present.get(k) != v}
    what = "settings the service, the keeper, the CLI and the hooks share"
    if not changed:
        return FileChange(path, before, before, what)
    lines = [line for line in (before or "").splitlines() if (env_pair(line) or ("",))[0] not in changed]
    if before is None:
        lines = [
            "# Ombre's settings, read by `ombre serve`, the keeper, the CLI and the hooks; a variable set in",
            "# a process's own environment wins over its line here. OMBRE_TOKEN may go here (mode 600).",
        ]
    lines += [f'{k}="{v}"' if any(c.isspace() for c in v) else f"{k}={v}" for k, v in sorted(changed.items())]
    return FileChange(path, before, "\n".join(lines) + "\n", what)


def plan(
    *, install: bool, env: dict[str, str], exe: Path | None = None, workdir: Path | None = None
) -> list[FileChange]:
    folder = unit_dir(env)
    changes = [_settings_change(env)] if install else []
    for name, (description, args) in UNITS.items():
        path = folder / name
        before = path.read_text(encoding="utf-8") if path.exists() else None
        ours = before is not None and before.startswith(MARK)
        if install:
            if before is not None and not ours:
                raise UsageError(
                    f"{path} exists and was not written by ombre",
                    hint="move it away (or remove it) and run `ombre install service` again",
                )
            after: str | None = unit_text(description, exe or Path("ombre"), args, env, workdir or Path.cwd())
        else:
            after = None if ours else before
        changes.append(FileChange(path, before, after, f"systemd user unit for `ombre {args}`"))
    return changes


def apply(changes: list[FileChange]) -> None:
    """Write or remove the units (only files that carry MARK are ever replaced or removed, so no backups) and
    write the settings file (mode 600: a token may live there; a line the person wrote is never removed)."""
    for change in changes:
        if change.after is None:
            change.path.unlink(missing_ok=True)
        else:
            change.path.parent.mkdir(parents=True, exist_ok=True)
            secret = change.path.name == SETTINGS_FILE
            replace_atomic(change.path, change.after.encode("utf-8"), mode=0o600 if secret else None)


def how_to_enable(names: list[str]) -> str:
    units = " ".join(names)
    return (
        f"enable them:   systemctl --user daemon-reload && systemctl --user enable --now {units}\n"
        f"logs:          journalctl --user -u ombre-serve -u ombre-keeper -f\n"
        f"keep running after logout: loginctl enable-linger {os.environ.get('USER', '$USER')}"
    )
