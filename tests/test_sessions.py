"""Session lookup: by id, id prefix, path, or newest of a project folder; CLAUDE_CONFIG_DIR honoured."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from ombre.errors import SessionError
from ombre.settings import Settings
from ombre.transcript.sessions import find_session, project_dir_name
from tests.conftest import FIXTURES

SAMPLE = FIXTURES / "viewer-1.0" / "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"


def _put(projects: Path, project: str, sid: str, mtime: float | None = None) -> Path:
    folder = projects / project
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{sid}.jsonl"
    shutil.copyfile(SAMPLE, path)
    if mtime:
        os.utime(path, (mtime, mtime))
    return path


@pytest.fixture
def projects(tmp_path: Path) -> Path:
    p = tmp_path / "claude" / "projects"
    p.mkdir(parents=True)
    return p


def test_project_dir_name_replaces_every_non_alphanumeric():
    assert project_dir_name("/home/me/my_app.v2") == "-home-me-my-app-v2"


def test_by_full_id_prefix_and_path(projects):
    a = _put(projects, "-a", "11111111-2222-4333-8444-555555555555")
    _put(projects, "-b", "11119999-2222-4333-8444-555555555555")
    assert find_session("11111111-2222-4333-8444-555555555555", projects) == a
    assert find_session("111111", projects) == a
    assert find_session(str(a), projects) == a


def test_ambiguous_prefix_lists_matches(projects):
    _put(projects, "-a", "11111111-2222-4333-8444-555555555555")
    _put(projects, "-b", "11119999-2222-4333-8444-555555555555")
    with pytest.raises(SessionError) as err:
        find_session("1111", projects)
    assert "ambiguous" in err.value.message and "11119999" in err.value.message and "-b" in err.value.message


def test_unknown_id_and_missing_path_are_clear_errors(projects):
    with pytest.raises(SessionError, match="no session whose id starts with"):
        find_session("deadbeef", projects)
    with pytest.raises(SessionError, match="no such session file"):
        find_session("/nowhere/x.jsonl", projects)
    with pytest.raises(SessionError, match="not a session id"):
        find_session("hello world", projects)


def test_newest_session_of_a_project_folder_or_working_directory(projects, tmp_path):
    work = tmp_path / "companion"
    work.mkdir()
    folder = project_dir_name(work.resolve())
    _put(projects, folder, "11111111-2222-4333-8444-555555555555", mtime=1_000)
    newest = _put(projects, folder, "22222222-2222-4333-8444-555555555555", mtime=2_000)
    (projects / folder / "agent-abc.jsonl").write_text("{}\n")  # subagent files are not sessions
    assert find_session(None, projects, cwd=work) == newest
    assert find_session(str(work), projects) == newest
    assert find_session(str(projects / folder), projects) == newest
    with pytest.raises(SessionError, match="no session files"):
        find_session(None, projects, cwd=tmp_path)


def test_claude_config_dir_is_honoured(tmp_path):
    s = Settings.from_env({"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / "elsewhere")})
    assert s.projects_dir == tmp_path / "elsewhere" / "projects"
    assert Settings.from_env({"HOME": str(tmp_path)}).projects_dir == tmp_path / ".claude" / "projects"
