"""Running the real Claude Code CLI (npm @anthropic-ai/claude-code@2.1.112, `node cli.js`) offline.

The recipe is written down in docs/e2e-claude-code.md; this module is that recipe in code, shared by every
end-to-end test. Claude Code talks to a FakeAnthropic on 127.0.0.1 and writes its sessions under a
temporary HOME.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_CLI = REPO / ".cache" / "claude-code" / "node_modules" / "@anthropic-ai" / "claude-code" / "cli.js"


def cli_path() -> Path | None:
    path = Path(os.environ.get("OMBRE_CLAUDE_CLI", DEFAULT_CLI))
    return path if path.is_file() and shutil.which("node") else None


@dataclass
class ClaudeCode:
    home: Path  # the temporary HOME; Claude's files live in home/.claude
    workdir: Path  # fixed, non-git working directory
    base_url: str
    cli: Path

    @classmethod
    def create(cls, root: Path, base_url: str, cli: Path) -> "ClaudeCode":
        home, workdir = root / "home", root / "work"
        (home / ".claude").mkdir(parents=True, exist_ok=True)
        workdir.mkdir(parents=True, exist_ok=True)
        # Stops the one HTTPS call Claude Code makes at exit for a metrics setting (offline it only fails).
        (home / ".claude.json").write_text(json.dumps(
            {"metricsStatusCache": {"enabled": False, "timestamp": 9999999999999}}))
        return cls(home, workdir, base_url, cli)

    @property
    def claude_home(self) -> Path:
        return self.home / ".claude"

    @property
    def project_dir(self) -> Path:
        from ombre.transcript.sessions import project_dir_name

        return self.claude_home / "projects" / project_dir_name(self.workdir.resolve())

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE"))}
        env.update({
            "HOME": str(self.home), "ANTHROPIC_BASE_URL": self.base_url, "ANTHROPIC_API_KEY": "sk-test",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1", "IS_SANDBOX": "1", "CLAUDE_CODE_DISABLE_GIT_INSTRUCTIONS": "1",
        })
        env.update(extra)
        return env

    def run(self, prompt: str, resume: str | None = None, timeout: float = 90, **env: str) -> dict:
        args = ["node", str(self.cli), "-p", prompt, "--output-format", "json",
                "--dangerously-skip-permissions"]
        if resume:
            args += ["--resume", resume]
        proc = subprocess.run(args, cwd=self.workdir, env=self.env(**env), stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            raise RuntimeError(f"claude exited {proc.returncode}\nstdout: {proc.stdout[-2000:]}\n"
                               f"stderr: {proc.stderr[-2000:]}")
        return json.loads(proc.stdout)
