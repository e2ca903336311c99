"""The real Claude Code CLI for every end-to-end test: skipped on a developer's machine without it, a
failure on CI, whose .ci/run installs it."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.e2e.claude import cli_path


@pytest.fixture(scope="module")
def cli() -> Path:
    path = cli_path()
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("Claude Code CLI not installed: .ci/run installs it into .cache/claude-code")
        pytest.skip("Claude Code CLI not installed (run .ci/run once, or set OMBRE_CLAUDE_CLI)")
    return path
