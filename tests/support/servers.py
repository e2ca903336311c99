"""Real Ombre processes on 127.0.0.1 for tests (`ombre serve`, the free ports they need) and the bridge state
files they re-bind (cc-connect's session file, in the shape it writes)."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

OMBRE = [sys.executable, "-m", "ombre.cli"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ombre_env(home: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"HOME": str(home), "OMBRE_HOME": str(home / "ombre")}, **extra)
    env.pop("OMBRE_TOKEN", None)
    return env


class Server:
    def __init__(self, home: Path, token: str | None = None, env: dict[str, str] | None = None,
                 port: int | None = None, host: str = "127.0.0.1", args: tuple[str, ...] = ()) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        args = OMBRE + ["serve", "--host", host, "--port", str(self.port), *args] + (["--token", token] if token else [])
        self.proc = subprocess.Popen(args, env=ombre_env(home, **(env or {})), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                if httpx.get(self.url + "/health", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("ombre serve did not start: " + self.proc.stderr.read().decode()[-2000:])

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


class Gateway:
    def __init__(self, home: Path, upstream: str, *args: str, **env: str) -> None:
        self.url = f"http://127.0.0.1:{free_port()}"
        port = self.url.rsplit(":", 1)[1]
        self.proc = subprocess.Popen(OMBRE + ["gateway", "--port", port, "--upstream", upstream, *args],
                                     env=ombre_env(home, **env), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                httpx.get(self.url + "/v1/models", timeout=1)
                return
            except httpx.HTTPError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(self.proc.stderr.read().decode()[-2000:])

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def cc_connect_file(tmp_path: Path, sid: str, work_dir: str = "/home/user/companion", key: str = "qq:42") -> Path:
    """cc-connect's session file for project "companion" in `work_dir`, named and shaped as it writes it."""
    import hashlib

    f = tmp_path / ".cc-connect" / "sessions" / f"companion_{hashlib.sha256(work_dir.encode()).hexdigest()[:8]}.json"
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(json.dumps({
        "sessions": {"s1": {"id": "s1", "name": "default", "agent_session_id": sid, "agent_type": "claudecode",
                            "past_agent_session_ids": [], "history": [], "created_at": "2026-12-01T10:00:00+08:00",
                            "updated_at": "2026-12-03T10:00:00+08:00", "last_user_activity": "2026-12-03T10:00:00+08:00"}},
        "active_session": {key: "s1"}, "user_sessions": {key: ["s1"]}, "counter": 1,
        "session_names": {}, "user_meta": {}, "version": 1}, ensure_ascii=False))
    return f
