from __future__ import annotations

import hashlib
import itertools
import os
import shutil
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("OMBRE_SHARED", REPO.parent / "shared"))
FIXTURES = SHARED / "fixtures" / "claude-code"


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def fixture_transcripts() -> list[Path]:
    return sorted(FIXTURES.rglob("*.jsonl"))


def fixture_id(path: Path) -> str:
    return str(path.relative_to(FIXTURES))


@pytest.fixture
def claude_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty Claude home (CLAUDE_CONFIG_DIR) and Ombre home for one test."""
    home = tmp_path / "claude"
    (home / "projects").mkdir(parents=True)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home))
    monkeypatch.setenv("OMBRE_HOME", str(tmp_path / "ombre"))
    return home


@pytest.fixture(scope="session")
def embedder():
    """The bundled e5 model, loaded once for the whole run."""
    from ombre.memory.embed import E5Embedder

    return E5Embedder()


@pytest.fixture
def svc(tmp_path: Path, embedder):
    """A memory service on a fresh SQLite file with the real model."""
    from ombre.app import open_service
    from ombre.settings import Settings

    s = open_service(Settings.from_env({"HOME": str(tmp_path)}), arbitrate=False, embedder=embedder)
    yield s
    s.close()


def install(src: Path, home: Path, project: str = "-work-companion", name: str | None = None) -> Path:
    """Copy a transcript into a Claude home's project folder (fixtures are read-only) and return the copy."""
    folder = home / "projects" / project
    folder.mkdir(parents=True, exist_ok=True)
    dest = folder / (name or src.name)
    shutil.copyfile(src, dest)
    dest.chmod(0o644)
    return dest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not FIXTURES.is_dir():
        raise pytest.UsageError(f"the shared fixtures are missing: {FIXTURES} (set OMBRE_SHARED)")


# -- PostgreSQL for the store tests: a real server from the pgserver package -------------------
_databases = itertools.count()


@pytest.fixture(scope="session")
def postgres(tmp_path_factory: pytest.TempPathFactory):
    """One PostgreSQL server for the session; each test gets a database of its own."""
    try:
        import pgserver
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("pgserver is missing: scripts/test installs it with the test extras")
        pytest.skip("pgserver is not installed (run scripts/test once)")
    server = pgserver.get_server(tmp_path_factory.mktemp("pg"), cleanup_mode="stop")
    yield server
    server.cleanup()


def fresh_database(server) -> str:
    import psycopg

    name = f"t{next(_databases)}_{int(time.time() * 1000) % 100000}"
    with psycopg.connect(server.get_uri(), autocommit=True) as db:
        db.execute(f"CREATE DATABASE {name}")
    return server.get_uri().replace("/postgres?", f"/{name}?")
