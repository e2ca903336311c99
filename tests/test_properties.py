"""Property-based tests on generated transcripts: whatever the shape, the rebuilt chain is the intended one
and every rewrite holds its guarantees (docs/architecture.md)."""
from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ombre.errors import SelectionError, TranscriptError
from ombre.transcript.chain import scan
from ombre.window.diet import DietOptions
from ombre.window.diet import run as run_diet
from ombre.window.forge import ForgeOptions
from ombre.window.forge import run as run_forge
from ombre.window.select import EndSpec, Selector
from tests.conftest import sha256
from tests.support.invariants import assert_new_session_sound
from tests.support.transcript_gen import companion_session

shapes = st.fixed_dictionaries({
    "seed": st.integers(0, 2**32 - 1),
    "turns": st.integers(1, 14),
    "tool_every": st.sampled_from([0, 1, 2, 3]),
    "image_every": st.sampled_from([0, 2, 5]),
    "payload_chars": st.sampled_from([100, 1_500, 6_000]),
    "compact_at": st.one_of(st.none(), st.integers(1, 10)),
    "sidechain_at": st.one_of(st.none(), st.integers(0, 10)),
    "legacy_progress": st.booleans(),
    "days": st.integers(1, 3),
    "thinking": st.booleans(),
    "spanning": st.booleans(),  # a message id that spans a tool result
    # responses streamed in batches (a message id continuing after results, results in any
    # order hanging off their own calls or off progress lines), task notifications, hook attachments
    "streamed": st.booleans(),
    "notes": st.booleans(),
})
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _write(tmp_path: Path, shape: dict):
    rng = random.Random(shape["seed"])
    kw = {k: v for k, v in shape.items() if k != "seed"}
    if kw["compact_at"] is not None and kw["compact_at"] >= kw["turns"]:
        kw["compact_at"] = None
    b = companion_session(rng, **kw)
    folder = tmp_path / "projects" / "-p"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{b.sid}.jsonl"
    path.write_text(b.text(), encoding="utf-8")
    return b, path


@FAST
@given(shape=shapes)
def test_rebuilt_chain_is_the_generated_chain(tmp_path_factory, shape):
    b, path = _write(tmp_path_factory.mktemp("g"), shape)
    with scan(path) as t:
        assert [e.uuid for e in t.events] == b.expected_chain
        assert [e.idx for e in t.events] == list(range(len(b.expected_chain)))


@FAST
@given(shape=shapes, retain=st.integers(1, 20_000), squash=st.one_of(st.none(), st.integers(200, 3_000)))
def test_forge_retain_holds_invariants(tmp_path_factory, shape, retain, squash):
    b, path = _write(tmp_path_factory.mktemp("g"), shape)
    digest = sha256(path)
    result = run_forge(path, ForgeOptions(selector=Selector(retain=retain, max_kept=100_000), squash=squash))
    assert sha256(path) == digest
    assert_new_session_sound(path, Path(result.new_path), squash=squash)
    assert result.turns_kept >= 1
    if result.turns_kept > 1:
        assert result.tokens_kept <= retain


@FAST
@given(shape=shapes)
def test_diet_keeps_every_event_and_squashes(tmp_path_factory, shape):
    b, path = _write(tmp_path_factory.mktemp("g"), shape)
    result = run_diet(path, DietOptions(retain=10_000_000, squash=500))
    objs = assert_new_session_sound(path, Path(result.new_path), squash=500)
    kept = [o["uuid"] for o in objs if o["type"] in ("user", "assistant")]
    assert kept == b.expected_chain[: len(kept)] and len(kept) == result.events_kept
    contents = [(o.get("message") or {}).get("content") for o in objs]
    images = [blk for c in contents if isinstance(c, list) for blk in c if blk.get("type") == "image"]
    assert images == [], "diet replaces every base64 image with a placeholder"
    if shape["image_every"] and result.events_kept:
        assert "ombre 已省略图片" in Path(result.new_path).read_text(encoding="utf-8") or result.images_squashed == 0


@FAST
@given(shape=shapes, data=st.data())
def test_forge_range_holds_invariants(tmp_path_factory, shape, data):
    b, path = _write(tmp_path_factory.mktemp("g"), shape)
    n = len(b.expected_chain)
    lo = data.draw(st.integers(0, n - 1))
    hi = data.draw(st.integers(lo, n - 1))
    selector = Selector(keep_from=EndSpec(idx=lo), keep_to=EndSpec(idx=hi), max_kept=10_000_000)
    try:
        result = run_forge(path, ForgeOptions(selector=selector))
    except SelectionError:
        with scan(path) as t:  # only a range with no reply at all may be refused
            assert not any(e.type == "assistant" for e in t.events[lo: hi + 1])
        return
    objs = assert_new_session_sound(path, Path(result.new_path))
    kept = [o["uuid"] for o in objs if o["type"] in ("user", "assistant")]
    # Turn alignment may widen the range but every event asked for (up to the last finished reply) is kept.
    wanted = b.expected_chain[lo: hi + 1]
    last_kept = b.expected_chain.index(kept[-1])
    assert [u for u in wanted if b.expected_chain.index(u) <= last_kept] == [
        u for u in kept if u in set(wanted)]


def test_malformed_line_outside_kept_range_is_skipped_inside_is_refused(tmp_path):
    rng = random.Random(7)
    b = companion_session(rng, turns=6, tool_every=0, thinking=False)
    lines = b.text().splitlines()
    lines.insert(3, '{"parentUuid": "x", "broken')
    folder = tmp_path / "projects" / "-p"
    folder.mkdir(parents=True)
    path = folder / f"{b.sid}.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with scan(path) as t:
        assert [bad.lineno for bad in t.bad_lines] == [4]
    ok = run_forge(path, ForgeOptions(selector=Selector(retain=1)))
    assert any("line 4" in w for w in ok.warnings)
    assert_new_session_sound(path, Path(ok.new_path))
    before = sorted(folder.iterdir())
    with pytest.raises(TranscriptError) as err:
        run_forge(path, ForgeOptions(selector=Selector(keep_from=EndSpec(idx=0), max_kept=10_000_000)))
    assert err.value.line == 4 and "malformed" in err.value.message
    assert sorted(folder.iterdir()) == before
