"""Real Ombre processes on 127.0.0.1 for tests: `ombre serve` (and the free ports they need)."""
from __future__ import annotations

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
                 port: int | None = None) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        args = OMBRE + ["serve", "--port", str(self.port)] + (["--token", token] if token else [])
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
