"""Fuzzing the transcript layer: 360 seeded mutations of real Claude Code transcripts
(../shared/fixtures) and a generated one — non-object messages, missing or mistyped keys, wrong content
types, lone surrogates, NaN and huge numbers, cut, doubled and swapped lines — through diet, forge (dry and
real) and the usage reader. Each may refuse with an OmbreError that says what is wrong; none may raise
anything else, and the original file stays byte-identical."""
from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from ombre.errors import OmbreError
from ombre.window import diet, forge
from ombre.window.select import Selector
from tests.support.transcript_gen import companion_session

FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "claude-code"
SOURCES = ["spotter-2.1/short.jsonl", "spotter-2.1/tool_heavy.jsonl", "viewer-1.0/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"]
PER_SOURCE = 90  # × 4 sources = 360 mutations (the issue asks for ≥ 300)


def _weird(rng: random.Random):
    return rng.choice(["text", 42, 3.5, None, True, [], ["a", 1], {"x": 1}, float("nan"), 10**30, "\ud800"])


def _mutate(lines: list[str], rng: random.Random) -> list[str]:
    lines = list(lines)
    i = rng.randrange(len(lines))
    try:
        obj = json.loads(lines[i])
    except ValueError:
        obj = {}
    kind = rng.randrange(12)
    if kind == 0 and isinstance(obj, dict):
        obj["message"] = _weird(rng)
    elif kind == 1 and isinstance(obj, dict) and obj:
        obj.pop(rng.choice(list(obj)), None)
    elif kind == 2 and isinstance(obj, dict):
        obj[rng.choice(["type", "uuid", "parentUuid", "sessionId", "timestamp", "isSidechain"])] = _weird(rng)
    elif kind == 3 and isinstance(obj, dict) and isinstance(obj.get("message"), dict):
        obj["message"]["content"] = _weird(rng)
    elif kind == 4 and isinstance(obj, dict) and isinstance(obj.get("message"), dict) \
            and isinstance(obj["message"].get("content"), list) and obj["message"]["content"]:
        obj["message"]["content"][0] = _weird(rng)
    elif kind == 5 and isinstance(obj, dict) and isinstance(obj.get("message"), dict):
        obj["message"]["usage"] = {"input_tokens": _weird(rng), "output_tokens": _weird(rng)}
    elif kind == 6:
        lines[i] = lines[i][: rng.randrange(1, max(2, len(lines[i])))]
        return lines
    elif kind == 7:
        lines.insert(i, lines[i])
        return lines
    elif kind == 8 and len(lines) > 1:
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
        return lines
    elif kind == 9:
        lines[i] = json.dumps(_weird(rng))
        return lines
    elif kind == 10 and isinstance(obj, dict) and isinstance(obj.get("message"), dict) \
            and isinstance(obj["message"].get("content"), list):
        obj["message"]["content"].append({"type": rng.choice(["tool_use", "tool_result", "image", "thinking"]),
                                          "id": _weird(rng), "tool_use_id": _weird(rng), "content": _weird(rng)})
    else:
        obj = {"type": "user", "message": {"role": "user", "content": "\ud83d 半个表情"}, "uuid": "u-fuzz",
               "parentUuid": None}
    lines[i] = json.dumps(obj, ensure_ascii=False, allow_nan=True) if not isinstance(obj, str) else obj
    return lines


def _sources(tmp: Path) -> list[tuple[str, list[str]]]:
    out = []
    for name in SOURCES:
        path = FIXTURES / name
        if path.exists():
            out.append((name, path.read_text(encoding="utf-8").splitlines()))
    out.append(("generated", companion_session(random.Random(9), turns=12, payload_chars=3_000).text().splitlines()))
    return out


@pytest.mark.parametrize("source", range(4))
def test_mutated_transcripts_get_an_answer_or_a_clear_error_never_a_traceback(tmp_path, source):
    sources = _sources(tmp_path)
    if source >= len(sources):
        pytest.skip("fixture not present")
    name, lines = sources[source]
    rng = random.Random(1000 + source)
    crashes = []
    for n in range(PER_SOURCE):
        mutated = lines
        for _ in range(rng.randint(1, 3)):
            mutated = _mutate(mutated, rng)
        folder = tmp_path / f"m{n}"
        folder.mkdir()
        path = folder / "0b1e6f5e-1111-4222-8333-444455556666.jsonl"
        data = ("\n".join(mutated) + "\n").encode("utf-8", "surrogatepass")
        path.write_bytes(data)
        for label, call in [
            ("forge dry", lambda: forge.run(path, forge.ForgeOptions(selector=Selector(retain=2_000), dry_run=True))),
            ("forge", lambda: forge.run(path, forge.ForgeOptions(selector=Selector(retain=2_000)))),
            ("diet", lambda: diet.run(path, diet.DietOptions(squash=200))),
        ]:
            try:
                call()
            except OmbreError:
                pass
            except Exception as exc:  # noqa: BLE001 — what this test exists to find
                crashes.append(f"{name} #{n} {label}: {type(exc).__name__}: {exc}")
        assert path.read_bytes() == data, f"{name} #{n}: the original changed"
        shutil.rmtree(folder)
    assert crashes == [], "\n".join(crashes[:20])


def test_a_kept_line_whose_message_is_not_an_object_is_a_clear_error(tmp_path):
    lines = companion_session(random.Random(3), turns=4).text().splitlines()
    i = max(n for n, line in enumerate(lines) if '"type":"assistant"' in line.replace(" ", ""))
    obj = json.loads(lines[i])
    obj["message"] = "not an object"
    lines[i] = json.dumps(obj, ensure_ascii=False)
    path = tmp_path / "0b1e6f5e-1111-4222-8333-444455556666.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(OmbreError) as err:
        forge.run(path, forge.ForgeOptions())
    assert "message" in str(err.value) and "not an object" in str(err.value), str(err.value)
