"""A stand-in for cc-connect (which cannot be installed here) that behaves as its source does
(chenhg5/cc-connect at 3727b74), for the parts a re-bind depends on. It is a port written from that source,
not from Ombre: it must catch Ombre's mistakes, so it shares no code with it.

- config.toml gives data_dir and the project (name, agent.options.work_dir);
- the session file is `<data_dir>/sessions/<project>_<sha256(abs work_dir)[:8]>.json` (an older name wins if it
  exists), read ONCE at start and rewritten whole and atomically on every save, never re-read while running;
- before resuming a stored agent_session_id it checks `$HOME/.claude/projects/<key>/<id>.jsonl` (its own
  encoding of the work dir, then legacy keys, then a case-insensitive scan); a miss logs "session ID does not
  belong to this project, clearing it", clears the id and starts FRESH;
- Claude runs as one long-lived process per conversation: `--output-format stream-json --input-format
  stream-json --permission-prompt-tool stdio --replay-user-messages --verbose [--resume ID]`, fed user messages
  on stdin; the session id comes from its init event;
- `/new` makes a new session for the conversation key (the next message starts fresh).

    standin_cc_connect.py serve|start --config C --state S   (env: HOME, OMBRE_CLAUDE_CLI, Claude's env)
    standin_cc_connect.py stop --state S
    standin_cc_connect.py send --state S --key qq:42 TEXT     (prints the turn as JSON)
    standin_cc_connect.py new --state S --key qq:42
"""
from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time
import tomllib
import urllib.request
from pathlib import Path

CLEARING = "session ID does not belong to this project, clearing it"


# -- the parts of cc-connect a re-bind depends on, ported --------------------------------------------------
def session_store_path(data_dir: str, name: str, work_dir: str) -> str:
    if not work_dir:
        filename = name + ".json"
    else:
        filename = f"{name}_{hashlib.sha256(os.path.abspath(work_dir).encode()).hexdigest()[:8]}.json"
    for legacy in (os.path.join(data_dir, filename), os.path.join(data_dir, filename[:-5] + ".sessions.json")):
        if os.path.exists(legacy):
            return legacy
    return os.path.join(data_dir, "sessions", filename)


def encode_claude_project_key(abs_path: str) -> str:
    out = []
    for r in abs_path.replace("\\", "/"):
        out.append("-" if r in "/:_ ~.@" or ord(r) >= 128 else r)
    return "".join(out)


def find_project_dir(home: str, abs_work_dir: str) -> str:
    base = os.path.join(home, ".claude", "projects")
    candidates = [encode_claude_project_key(abs_work_dir), abs_work_dir.replace(os.sep, "-"),
                  abs_work_dir.replace("/", "-").replace("\\", "-").replace(":", "-"),
                  abs_work_dir.replace("/", "-").replace("\\", "-").replace(":", "-").replace("_", "-"),
                  abs_work_dir.replace("\\", "/").replace("/", "-")]
    for key in candidates:
        if os.path.isdir(os.path.join(base, key)):
            return os.path.join(base, key)
    try:
        entries = os.listdir(base)
    except OSError:
        return ""
    encoded = encode_claude_project_key(abs_work_dir)
    for name in entries:
        if os.path.isdir(os.path.join(base, name)) and (name == encoded or name.lower() == encoded.lower()):
            return os.path.join(base, name)
    return ""


def validate_session_id(home: str, work_dir: str, sid: str) -> bool:
    if not sid or not home or not work_dir:
        return False
    folder = find_project_dir(home, os.path.abspath(work_dir))
    return bool(folder) and os.path.exists(os.path.join(folder, sid + ".jsonl"))


def now_rfc3339() -> str:
    return dt.datetime.now().astimezone().isoformat()


class Engine:
    def __init__(self, config: Path, state: Path) -> None:
        raw = tomllib.loads(config.read_text(encoding="utf-8"))
        project = raw["projects"][0]
        self.home = os.environ["HOME"]
        self.data_dir = raw.get("data_dir") or os.path.join(self.home, ".cc-connect")
        self.work_dir = project["agent"]["options"]["work_dir"]
        self.path = session_store_path(self.data_dir, project["name"], self.work_dir)
        self.state = state
        self.lock = threading.Lock()
        self.procs: dict[str, subprocess.Popen] = {}
        try:
            with open(self.path, encoding="utf-8") as f:
                snap = json.load(f)
        except (OSError, ValueError):
            snap = {}  # a missing or unparsable file: cc-connect starts with no sessions
        self.sessions = snap.get("sessions") or {}
        self.active = snap.get("active_session") or {}
        self.user_sessions = snap.get("user_sessions") or {}
        self.counter = snap.get("counter") or 0
        self.rest = {k: v for k, v in snap.items()
                     if k not in ("sessions", "active_session", "user_sessions", "counter")}

    def log(self, **event: object) -> None:
        with open(self.state / "log.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps({"at": now_rfc3339(), **event}, ensure_ascii=False) + "\n")

    def save(self) -> None:
        snap = {"sessions": self.sessions, "active_session": self.active, "user_sessions": self.user_sessions,
                "counter": self.counter, **self.rest, "version": 1}
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        tmp = os.path.join(os.path.dirname(self.path), f".tmp-{os.getpid()}")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(snap, f, ensure_ascii=False, indent=2)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)

    def _create(self, key: str, name: str) -> dict:
        self.counter += 1
        sid = f"s{self.counter}"
        stamp = now_rfc3339()
        self.sessions[sid] = {"id": sid, "name": name, "agent_session_id": "", "history": [],
                              "created_at": stamp, "updated_at": stamp, "last_user_activity": "0001-01-01T00:00:00Z"}
        self.active[key] = sid
        self.user_sessions.setdefault(key, []).append(sid)
        return self.sessions[sid]

    def session(self, key: str) -> dict:
        sid = self.active.get(key)
        if sid in self.sessions:
            return self.sessions[sid]
        s = self._create(key, "default")
        self.save()
        return s

    def new(self, key: str) -> dict:
        with self.lock:
            self._close(key)
            s = self._create(key, "new")
            self.save()
            self.log(event="new", key=key, session=s["id"])
            return {"session": s["id"]}

    def _close(self, key: str) -> None:
        proc = self.procs.pop(key, None)
        if proc is not None:
            proc.stdin.close()
            proc.wait(timeout=30)

    def _start(self, key: str, session: dict) -> tuple[subprocess.Popen, bool, bool]:
        sid, cleared = session.get("agent_session_id") or "", False
        if sid and not validate_session_id(self.home, self.work_dir, sid):
            self.log(event="warn", message=CLEARING, session_key=key, invalid_session_id=sid)
            session["agent_session_id"], sid, cleared = "", "", True
            self.save()
        args = ["node", os.environ["OMBRE_CLAUDE_CLI"], "--output-format", "stream-json", "--input-format",
                "stream-json", "--permission-prompt-tool", "stdio", "--replay-user-messages", "--verbose",
                "--permission-mode", "acceptEdits"]
        if sid:
            args += ["--resume", sid]
        proc = subprocess.Popen(args, cwd=self.work_dir, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, encoding="utf-8")
        self.procs[key] = proc
        self.log(event="start", key=key, resume=sid or None)
        return proc, bool(sid), cleared

    def turn(self, key: str, text: str) -> dict:
        with self.lock:
            session = self.session(key)
            resumed = cleared = None
            proc = self.procs.get(key)
            if proc is None or proc.poll() is not None:
                proc, resumed, cleared = self._start(key, session)
            proc.stdin.write(json.dumps({"type": "user", "message": {"role": "user", "content": [
                {"type": "text", "text": text}]}}, ensure_ascii=False) + "\n")
            proc.stdin.flush()
            reply, agent_sid = "", None
            for line in proc.stdout:
                event = json.loads(line)
                if event.get("type") == "system" and event.get("subtype") == "init":
                    agent_sid = event.get("session_id")
                if event.get("type") == "result":
                    reply, agent_sid = event.get("result", ""), event.get("session_id") or agent_sid
                    break
            else:
                raise RuntimeError("claude exited mid-turn")
            if agent_sid and not session.get("agent_session_id"):
                session["agent_session_id"] = agent_sid
            session["history"].append({"role": "user", "content": text, "timestamp": now_rfc3339()})
            session["history"].append({"role": "assistant", "content": reply, "timestamp": now_rfc3339()})
            session["updated_at"] = now_rfc3339()
            self.save()
            return {"session": session["id"], "agent_session_id": agent_sid, "reply": reply,
                    "resumed": resumed, "cleared": cleared}

    def shutdown(self) -> None:
        for key in list(self.procs):
            self._close(key)


def serve(config: Path, state: Path) -> None:
    state.mkdir(parents=True, exist_ok=True)
    engine = Engine(config, state)

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            try:
                out = engine.new(body["key"]) if self.path == "/new" else engine.turn(body["key"], body["text"])
                status = 200
            except Exception as exc:  # noqa: BLE001 — reported to the test, which fails on it
                out, status = {"error": repr(exc)}, 500
            data = json.dumps(out, ensure_ascii=False).encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)

    def stop(*_: object) -> None:
        threading.Thread(target=server.shutdown).start()

    signal.signal(signal.SIGTERM, stop)
    (state / "port").write_text(str(server.server_address[1]))
    (state / "pid").write_text(str(os.getpid()))
    engine.log(event="ready", session_file=engine.path)
    server.serve_forever()
    engine.shutdown()
    (state / "port").unlink(missing_ok=True)
    (state / "pid").unlink(missing_ok=True)


def post(state: Path, route: str, body: dict) -> dict:
    port = (state / "port").read_text()
    req = urllib.request.Request(f"http://127.0.0.1:{port}{route}", data=json.dumps(body).encode(), method="POST")
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("command", choices=["serve", "start", "stop", "send", "new"])
    ap.add_argument("--config", type=Path)
    ap.add_argument("--state", type=Path, required=True)
    ap.add_argument("--key", default="qq:42")
    ap.add_argument("text", nargs="?")
    a = ap.parse_intermixed_args()
    if a.command == "serve":
        serve(a.config, a.state)
    elif a.command == "start":
        a.state.mkdir(parents=True, exist_ok=True)
        (a.state / "port").unlink(missing_ok=True)
        with open(a.state / "stderr.log", "ab") as err:
            subprocess.Popen([sys.executable, __file__, "serve", "--config", str(a.config), "--state", str(a.state)],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        for _ in range(200):
            if (a.state / "port").exists():
                return
            time.sleep(0.05)
        sys.exit("the stand-in did not start")
    elif a.command == "stop":
        pid_file = a.state / "pid"
        if not pid_file.exists():
            return
        pid = int(pid_file.read_text())
        os.kill(pid, signal.SIGTERM)
        for _ in range(600):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)
        sys.exit("the stand-in did not stop")
    else:
        print(json.dumps(post(a.state, f"/{a.command}" if a.command == "new" else "/message",
                              {"key": a.key, "text": a.text}), ensure_ascii=False))


if __name__ == "__main__":
    main()
