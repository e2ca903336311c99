"""`ombre demo`: the main job on an embedded default.

A bundled real session is copied into a temporary Claude home, then anchors, usage, diet and forge run on
it for real; a memory store in the same temporary place then holds, arbitrates and recalls, and shows the
per-turn block a hook would inject and the handoff pack a tunnel would carry. A person's own `~/.claude`
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

from .inject.cards import InjectRequest, turn_block
from .memory.hold import HoldRequest
from .settings import Settings
from .transcript.sessions import newest_session, session_files
from .transcript.usage import read_usage
from .window.anchors import anchors
from .window.diet import DietOptions, run as run_diet
from .window.forge import ForgeOptions, run as run_forge
from .window.select import Selector
from .write.commitment_arbitrate import open_service

TOOL_HEAVY = "d6e0bada-1959-4eec-a9d2-0bfade768d8f"  # Claude Code 2.1.38: tools, interrupts, three turns
LONG_TOOLS = "5c0375b4-57a5-4f26-b12d-d022ee4e51b7"  # Claude Code 1.0.x: long tool output
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
    steps.append(Step("diet: squash tool output and images, keep dialogue and thinking",
                      run_diet(long_tools, DietOptions(squash=settings.diet_squash, history=history))))
    steps.append(Step("anchors: real user messages and the idx forge cuts at", anchors(heavy)))
    steps.append(Step("forge --dry-run --retain 1500: keep only the recent raw tail",
                      run_forge(heavy, ForgeOptions(selector=Selector(retain=1500), dry_run=True))))
    steps.append(Step("forge --retain 1500 --inject <handoff>", run_forge(heavy, ForgeOptions(
        selector=Selector(retain=1500), history=history,
        inject_text="正在谈：示例会话的工具调用。\n未完成：无。\n线索词：示例, 演示"))))
    unchanged = all(_sha(p) == h for p, h in before.items())
    steps.append(Step("originals byte-identical after both runs: " + ("yes" if unchanged else "NO"), ""))
    steps += _memory_steps(dataclasses.replace(settings, ombre_home=home / "ombre"), heavy)
    if not keep:
        shutil.rmtree(home, ignore_errors=True)
        steps.append(Step("temporary Claude home removed (use --keep DIR to look at the files)", ""))
    return steps


def _memory_steps(settings: Settings, session: Path) -> list[Step]:
    """hold → arbitration → the per-turn block → the handoff pack, on a fresh store beside the demo home."""
    from .tunnel.handoff import prepare

    service = open_service(settings)
    lines = []
    try:
        for content, kind, quote in (("每周三晚上语音", "承诺", "以后每周三晚上都语音吧"),
                                     ("她喜欢喝桂花乌龙", "偏好", None),
                                     ("语音改到每周四晚上", "承诺", "这周改成周四吧，之后也周四。")):
            r = service.hold(HoldRequest(content=content, type=kind, quote=quote))
            verdict = f"  arbitration: {r.arbitration['action']} ({r.arbitration['reason']})" if r.arbitration else ""
            lines.append(f"hold [{kind}] {content} → {r.decision}, {r.status}{verdict}")
        block = turn_block(service, InjectRequest("我们这周什么时候语音？", session_id="demo"))
    finally:
        service.close()
    return [Step("hold: evidence, write_gate and commitment arbitration (a changed day replaces the old one)",
                 "\n".join(lines)),
            Step("the per-turn block a hook injects for 「我们这周什么时候语音？」 (user side only)",
                 block.text or "(nothing close enough to show)"),
            Step("handoff pack a tunnel would carry (ombre handoff prepare)", prepare(session).render())]
