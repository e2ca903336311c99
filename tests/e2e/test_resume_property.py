"""Every chain shape the CLI rebuilds, rebuilt alike: a property test against the real CLI.

For N generated sessions of random shape — responses streamed in batches (one message id continuing after
tool results, results in any order, hanging off their own calls or off progress lines), parallel calls,
legacy progress lines, system lines, sidechains, compactions, task notifications, hook attachments, images —
the messages Claude Code 2.1.112 sends on `--resume` of the original are the chain ombre rebuilt, and a
diet and a forge of each resume cleanly: no orphaned or synthesised tool results, thinking as stored, the
newest person's words (or the summary standing for them) in the request, and the request the chain of the
new file. N is OMBRE_RESUME_SESSIONS (120 by default, as CI runs it: about five minutes on 2 cores; 200 passed
as well, at nine).
"""
from __future__ import annotations

import json
import os
import random
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ombre.errors import OmbreError
from ombre.transcript.chain import scan
from ombre.window import carry
from ombre.window.diet import DietOptions
from ombre.window.diet import run as run_diet
from ombre.window.forge import ForgeOptions, ForgeResult
from ombre.window.forge import run as run_forge
from ombre.window.select import Selector
from tests.e2e.claude import ClaudeCode
from tests.e2e.resume_check import chain_tokens, request_tokens
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.transcript_gen import companion_session

pytestmark = pytest.mark.e2e
SESSIONS = int(os.environ.get("OMBRE_RESUME_SESSIONS", "120"))
WORKERS = 3  # the CLI spends much of its second waiting on its own start-up, not on a core
PROMPT = "我回来了，继续"
SYNTHETIC = ("Tool result missing", "Orphaned tool result", "[Tool use interrupted]", "No response requested")


def shape(seed: int) -> dict:
    rng = random.Random(seed)
    turns = rng.randint(1, 9)
    compact_at = rng.choice([None, None, rng.randint(1, 8)])
    return {"turns": turns, "tool_every": rng.choice([0, 1, 1, 2]), "image_every": rng.choice([0, 0, 3]),
            "payload_chars": rng.choice([100, 1_500, 4_000]),
            "compact_at": compact_at if compact_at is not None and compact_at < turns else None,
            "sidechain_at": rng.choice([None, None, rng.randint(0, 8)]), "legacy_progress": rng.random() < 0.3,
            "days": rng.randint(1, 2), "thinking": rng.random() < 0.7, "spanning": rng.random() < 0.3,
            "streamed": rng.random() < 0.6, "notes": rng.random() < 0.5}


class Worker:
    """One Claude Code home and one fake API per thread: runs never share a session folder or a reply queue."""

    def __init__(self, root: Path, cli: Path) -> None:
        self.fake = FakeAnthropic().start()
        self.cc = ClaudeCode.create(root, self.fake.url, cli)
        self.cc.project_dir.mkdir(parents=True, exist_ok=True)

    def resume(self, sid: str) -> dict:
        before = len(self.fake.requests)
        self.cc.run(PROMPT, resume=sid, timeout=120)
        bodies = [r.body for r in self.fake.requests[before:] if "count_tokens" not in r.path]
        assert len(bodies) == 1, f"{len(bodies)} requests for one resumed turn (a compaction?)"
        return bodies[0]


def _texts(body: dict) -> str:
    return json.dumps(body["messages"], ensure_ascii=False)


def _stored_thinking(path: Path) -> list[tuple[str, str]]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        content = (json.loads(line).get("message") or {}).get("content")
        if isinstance(content, list):
            out += [(b.get("thinking", ""), b.get("signature", "")) for b in content
                    if isinstance(b, dict) and b.get("type") == "thinking"]
    return out


def _check_rewrite(w: Worker, name: str, result: ForgeResult, required: list[str]) -> list[str]:
    new = Path(result.new_path)
    want = chain_tokens(new)
    body = w.resume(result.new_session)
    problems = []
    if request_tokens(body, PROMPT) != want:
        problems.append(f"{name}: the request is not the chain of the new file")
    text = _texts(body)
    problems += [f"{name}: the request holds a synthesised {s!r}" for s in SYNTHETIC if s in text]
    sent = [(b.get("thinking", ""), b.get("signature", "")) for m in body["messages"]
            for b in (m["content"] if isinstance(m["content"], list) else []) if b.get("type") == "thinking"]
    stored = _stored_thinking(new)
    if sorted(sent) != sorted(stored):
        problems.append(f"{name}: thinking sent ({len(sent)}) is not the thinking stored ({len(stored)})")
    problems += [f"{name}: the request lost {t[:40]!r}" for t in required if json.dumps(t, ensure_ascii=False)[1:-1]
                 not in text]
    return problems


def check(w: Worker, seed: int) -> list[str]:
    rng = random.Random(seed * 7 + 1)
    b = companion_session(random.Random(seed), **shape(seed))
    path = w.cc.project_dir / f"{b.sid}.jsonl"
    path.write_text(b.text(), encoding="utf-8")
    with scan(path) as t:
        required = carry.required_texts(t, t.events)
    want = chain_tokens(path)
    squash = rng.choice([300, 2_000])
    problems, rewrites = [], []
    for name, rewrite in (
            ("diet", lambda: run_diet(path, DietOptions(squash=squash, retain=rng.choice([150_000, 2_000])))),
            ("forge", lambda: run_forge(path, ForgeOptions(
                selector=Selector(retain=rng.randint(300, 20_000), max_kept=100_000),
                squash=rng.choice([None, squash]), inject_text=rng.choice([None, "当前话题：接着聊"]))))):
        try:
            rewrites.append((name, rewrite()))
        except OmbreError as exc:  # every generated shape has a finished reply: a refusal is a bug
            problems.append(f"{name} refused: {exc.message.splitlines()[0]} {exc.message.splitlines()[1:2]}")
    body = w.resume(b.sid)  # after the rewrites: resuming appends to the original
    got = request_tokens(body, PROMPT)
    if got != want:
        first = next((i for i, (x, y) in enumerate(zip(want, got)) if x != y), min(len(want), len(got)))
        problems.append(f"the CLI's request differs from ombre's chain at block {first}: ombre "
                        f"{want[first:first + 3]} CLI {got[first:first + 3]}")
    for name, result in rewrites:
        problems += _check_rewrite(w, name, result, required)
    return [f"seed {seed} {shape(seed)}: {p}" for p in problems]


def test_the_cli_and_ombre_rebuild_every_generated_chain_alike(tmp_path_factory, cli):
    local = threading.local()
    roots = [tmp_path_factory.mktemp(f"cc{i}") for i in range(WORKERS)]  # mktemp is not thread-safe
    workers: list[Worker] = []
    lock = threading.Lock()

    def run(seed: int) -> list[str]:
        if not hasattr(local, "worker"):
            with lock:
                local.worker = Worker(roots[len(workers)], cli)
                workers.append(local.worker)
        return check(local.worker, seed)

    try:
        with ThreadPoolExecutor(WORKERS) as pool:
            problems = [p for found in pool.map(run, range(SESSIONS)) for p in found]
    finally:
        for w in workers:
            w.fake.stop()
    assert not problems, f"{len(problems)} problem(s) in {SESSIONS} sessions:\n" + "\n".join(problems[:15])
