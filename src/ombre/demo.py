"""`ombre demo`: the main job on an embedded default.

Bundled real sessions are copied into a temporary Claude home, then anchors, usage, diet and forge run on
them for real; a short Chinese companion chat bundled beside them is then distilled into a memory store in
the same temporary place, which arbitrates a changed promise and recalls, and shows the per-turn block a hook
would inject and the handoff pack a tunnel would carry. A person's own `~/.claude`
and `~/.ombre` are only ever read (dry runs) and never written.
"""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from .app import open_service
from .inject.cards import InjectRequest, turn_block
from .memory.hold import HoldRequest
from .settings import Settings
from .transcript.sessions import newest_session, session_files
from .transcript.usage import read_usage
from .tunnel.handoff import prepare
from .window.anchors import anchors
from .window.diet import DietOptions
from .window.diet import run as run_diet
from .window.forge import ForgeOptions
from .window.forge import run as run_forge
from .window.select import Selector
from .write.async_distill import Distiller

TOOL_HEAVY = "d6e0bada-1959-4eec-a9d2-0bfade768d8f"  # Claude Code 2.1.38: tools, interrupts, three turns
LONG_TOOLS = "5c0375b4-57a5-4f26-b12d-d022ee4e51b7"  # Claude Code 1.0.x: long tool output
CHAT = "7b2f4c1e-3a9d-4e5b-8c6f-0d1e2f3a4b5c"  # a short Chinese companion chat written for the demo
DEMO_PROJECT = "-demo-companion"


@dataclass
class Step:
    title: str
    value: object  # a ForgeResult, UsageReport, list of Anchor, or a line of text


def sample_sessions() -> list[Path]:
    folder = resources.files("ombre") / "samples"
    return sorted(Path(str(p)) for p in folder.iterdir() if str(p).endswith(".jsonl"))


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run_demo(settings: Settings, keep: Path | None = None) -> list[Step]:
    steps: list[Step] = []
    real = [p for p in settings.projects_dir.glob("*") if session_files(p)] if settings.projects_dir.is_dir() else []
    if real:
        newest = newest_session(max(real, key=lambda p: max(f.stat().st_mtime for f in session_files(p))))
        steps.append(Step(f"your newest session (read only, dry runs) — {newest}", read_usage(newest)))
        steps.append(Step("diet --dry-run on it", run_diet(newest, DietOptions(dry_run=True))))
        steps.append(Step("forge --dry-run on it", run_forge(newest, ForgeOptions(dry_run=True))))
    home = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="ombre-demo-"))
    project = home / "projects" / DEMO_PROJECT
    project.mkdir(parents=True, exist_ok=True)
    for sample in sample_sessions():
        shutil.copyfile(sample, project / sample.name)
    history = home / "ombre-history.jsonl"
    steps.append(Step(f"bundled sample sessions copied to a temporary Claude home: {project}", ""))
    heavy, long_tools = project / f"{TOOL_HEAVY}.jsonl", project / f"{LONG_TOOLS}.jsonl"
    before = {p: _sha(p) for p in (heavy, long_tools)}
    steps.append(Step("usage (context % from the stored usage)", read_usage(long_tools)))
    steps.append(
        Step(
            "diet: squash tool output and images, keep dialogue and thinking",
            run_diet(long_tools, DietOptions(squash=settings.diet_squash, history=history)),
        )
    )
    steps.append(Step("anchors: real user messages and the idx forge cuts at", anchors(heavy)))
    steps.append(
        Step(
            "forge --dry-run --retain 1500: keep only the recent raw tail",
            run_forge(heavy, ForgeOptions(selector=Selector(retain=1500), dry_run=True)),
        )
    )
    steps.append(
        Step(
            "forge --retain 1500 --inject <handoff>",
            run_forge(
                heavy,
                ForgeOptions(
                    selector=Selector(retain=1500),
                    history=history,
                    inject_text="正在谈：示例会话的工具调用。\n未完成：无。\n线索词：示例, 演示",
                ),
            ),
        )
    )
    unchanged = all(_sha(p) == h for p, h in before.items())
    steps.append(Step("originals byte-identical after both runs: " + ("yes" if unchanged else "NO"), ""))
    # warm-up on: the chat is older than this store, and its turns are what the demo distils
    steps += _memory_steps(
        dataclasses.replace(settings, ombre_home=home / "ombre", distill_warmup=True), project / f"{CHAT}.jsonl"
    )
    if not keep:
        shutil.rmtree(home, ignore_errors=True)
        steps.append(Step("temporary Claude home removed (use --keep DIR to look at the files)", ""))
    return steps


def _memory_steps(settings: Settings, chat: Path) -> list[Step]:
    """The bundled Chinese chat as a person's companion would live it: distilled into memories, a promise
    changed later, the per-turn block a hook would inject, and the handoff pack a tunnel would carry."""
    service = open_service(settings)
    try:
        distilled = Distiller(settings, service).run(chat, force=True)
        kept = [
            f"[{c['type']}] {c['content']} ← 「{c['quote'] or '未确认'}」 → {h['decision']}"
            for c, h in zip(distilled.candidates, distilled.held)
        ] or [f"nothing kept: {distilled.reason}"]
        r = service.hold(
            HoldRequest(content="每周的语音改到周四晚上", type="承诺", quote="以后周三的语音改到周四晚上吧")
        )
        verdict = f"  arbitration: {r.arbitration['action']} ({r.arbitration['reason']})" if r.arbitration else ""
        change = f"hold [承诺] 每周的语音改到周四晚上 → {r.decision}, {r.status}{verdict}"
        block = turn_block(service, InjectRequest("我们这周什么时候语音呀？", session_id="demo"))
    finally:
        service.close()
    return [
        Step(
            "distill: what the chat leaves in memory (the rules backend; passing states like 今天好累 stay out)",
            "\n".join(kept),
        ),
        Step("a later turn changes the promise: commitment arbitration replaces the old day", change),
        Step(
            "the per-turn block a hook injects for 「我们这周什么时候语音呀？」 (user side only)",
            block.text or "(nothing close enough to show)",
        ),
        Step("handoff pack a tunnel would carry (ombre handoff prepare)", prepare(chat).render()),
    ]
