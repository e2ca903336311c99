"""Coming over from Ombre-Brain: the fixture vault (tests/data/ombre_brain, written in its documented format)
imported from its folder and from its export zip, through the library and the real CLI."""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from ombre.app import open_service
from ombre.memory.breath import BreathRequest
from ombre.memory.model import FEEL_DOMAIN, FEEL_TYPE, LETTER_TYPE, UNCONFIRMED
from ombre.settings import Settings
from ombre.write.ombre_brain import MAX_BUCKET_BYTES, import_vault, memory_id
from tests.support.ombre_brain import VAULT, export_files, export_zip
from tests.support.servers import Server, ombre_env

OMBRE = [str(Path(sys.executable).parent / "ombre")]
BROKEN = {"dynamic/生活/2026-04-01 10-00-00 坏的_ffff00001111.md": "broken frontmatter",
          "dynamic/生活/2026-04-01 10-00-00 没有头_ffff00002222.md": "no frontmatter",
          "dynamic/生活/2026-04-01 10-00-00 编码_ffff00003333.md": "not UTF-8"}
BAD_SOURCE = "src_f9df391f80e0328ae2afbc13221e4917b756a0704ab1d21877b8e4ce0186d43b.source"


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    copy = tmp_path / "vault"
    shutil.copytree(VAULT, copy)
    return copy


def _service(tmp_path: Path, embedder, **env: str):
    return open_service(Settings.from_env({"HOME": str(tmp_path), **env}), arbitrate=False, embedder=embedder)


def _tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _by_original(svc) -> dict[str, object]:
    return {m.origin["original_id"]: m for m in svc.store.list(archived=None, limit=1_000) if m.origin}


def test_every_kind_keeps_its_meaning(vault, tmp_path, embedder):
    svc = _service(tmp_path, embedder, OMBRE_MAX_CONTENT_CHARS="60")  # shorter than the letter
    try:
        report = import_vault(svc, vault)
        got = _by_original(svc)
    finally:
        svc.close()
    assert report.added == len(got) == 12 and report.embedded == 24  # e5 and USE for each

    plan = got["7c1d2e3f4a5b"]  # an open plan: a commitment, never decaying, quoted from its source
    assert plan.type == "承诺" and plan.is_commitment and not plan.archived
    assert plan.evidence.quote == "以后每周五晚上九点我们视频好不好？" and plan.status != UNCONFIRMED
    assert "视频" in plan.tags and "__plan__" not in plan.tags and plan.domain == "plan"
    for original, status in (("8d2e3f4a5b6c", "resolved"), ("9e3f4a5b6c7d", "abandoned")):
        done = got[original]
        assert done.type == "承诺" and done.archived and f"a plan {status} there" in done.origin["reason"]

    assert got["a1b2c3d4e5f6"].pinned and got["b2c3d4e5f6a1"].pinned  # permanent, and protected
    assert got["a1b2c3d4e5f6"].importance == got["b2c3d4e5f6a1"].importance == 10
    assert sorted(report.pinned) == ["生日", "说话要直接"]

    feel = got["feel_202605012205_V035"]
    assert feel.type == FEEL_TYPE and feel.domain == FEEL_DOMAIN and feel.valence == 0.35

    letter = got["9e8d7c6b5a41"]
    source = next(VAULT.glob("buckets/letters/history/*.md")).read_text(encoding="utf-8")
    assert letter.type == LETTER_TYPE and len(letter.content) > 60 and source.rstrip().endswith(letter.content)
    assert letter.importance == 10 and letter.title == "写在雨夜" and letter.domain == "letter"
    assert "a letter sealed there until 2027-01-01" in letter.origin["reason"]  # its lock_type: timed
    assert report.sealed == [(next(p for p, _ in report.sealed), "a letter sealed there until 2027-01-01")]

    assert got["d4e5f6a1b2c3"].archived and not got["d4e5f6a1b2c3"].pinned
    assert "e5f6a1b2c3d4" not in got  # deleted there (a tombstone): not brought back
    assert any("tombstone" in why for _, why in report.skipped)

    mango = got["aa11bb22cc33"]  # an ordinary bucket: a preference by what it says; old fields read
    assert mango.type == "偏好" and (mango.valence, mango.arousal) == (0.2, 0.4) and mango.activation_count == 1
    assert mango.created == "2024-11-20T00:00:00+00:00"  # 08:00 without a zone is Shanghai time
    assert report.zoneless == 1 and any("Asia/Shanghai" in n for n in report.notes)
    launch = got["3f9a0c12ab4e"]
    assert launch.type == "事件" and launch.domain == "工作" and "成长" in launch.tags and "上线" in launch.tags
    assert launch.created == "2026-05-01T06:23:05+00:00" and launch.importance == 7
    assert launch.origin["path"] == "dynamic/工作/2026-05-01 14-23-05 第一次上线_3f9a0c12ab4e.md"
    assert launch.origin["by"] == "ombre-brain"


def test_quotes_come_only_from_matching_source_files(vault, svc):
    report = import_vault(svc, vault)
    got = _by_original(svc)
    sources = "".join(p.read_text(encoding="utf-8") for p in (vault / "buckets" / "_sources").iterdir())
    launch, mango = got["3f9a0c12ab4e"], got["aa11bb22cc33"]
    for m in (launch, mango):  # verbatim, from the person's lines, not the companion's
        assert m.evidence.quote and m.evidence.quote in sources and m.status != UNCONFIRMED
    assert "盯着日志" in launch.evidence.quote and "辛苦啦" not in launch.evidence.quote
    assert mango.evidence.quote == "再说一次哦，我对芒果过敏，吃了会起疹子。"
    # a source that is missing, and one whose content is not what its name's hash says: 未确认, no quote
    for original in ("bb22cc33dd44", "cc33dd44ee55"):
        assert got[original].evidence.quote is None and got[original].status == UNCONFIRMED
    assert any(path.endswith(BAD_SOURCE) and "SHA-256" in why for path, why in report.refused)
    assert report.quoted == 3 and report.unconfirmed == 9


def test_a_second_run_adds_nothing_and_the_source_is_never_changed(vault, svc):
    before = _tree(vault)
    first = import_vault(svc, vault)
    count = len(svc.store.list(archived=None))
    again = import_vault(svc, vault)
    assert first.added == count == 12 and again.added == 0 and len(svc.store.list(archived=None)) == count
    assert {p for p, why in again.skipped if why == "already imported"} == {
        m.origin["path"] for m in _by_original(svc).values()}
    assert _tree(vault) == before
    # the id is the original id with the text's hash: a bucket edited there comes in beside the old one
    assert memory_id("3f9a0c12ab4e", "a") != memory_id("3f9a0c12ab4e", "b") == memory_id("3f9a0c12ab4e", "b")


def test_a_read_only_vault_imports(vault, svc):
    for p in sorted(vault.rglob("*"), reverse=True):
        p.chmod(0o555 if p.is_dir() else 0o444)
    try:
        assert import_vault(svc, vault).added == 12
    finally:
        for p in vault.rglob("*"):
            p.chmod(0o755 if p.is_dir() else 0o644)


def test_dry_run_writes_nothing_and_says_what_would_happen(vault, svc):
    dry = import_vault(svc, vault, dry_run=True)
    assert svc.store.list(archived=None) == [] and dry.added == 0 and dry.embedded == 0
    real = import_vault(svc, vault)
    for name in ("by_type", "by_origin", "pinned", "archived", "skipped", "refused", "quoted", "unconfirmed"):
        assert getattr(dry, name) == getattr(real, name), name
    assert dry.by_type == {"事件": 6, "承诺": 3, "偏好": 1, FEEL_TYPE: 1, LETTER_TYPE: 1}
    assert len(dry.archived) == 3 and {why for _, why in dry.archived} == {
        "archived there", "a plan resolved there", "a plan abandoned there"}


def test_pinned_beyond_our_cap_are_kept_at_importance_10_and_listed(vault, tmp_path, embedder):
    svc = _service(tmp_path, embedder, OMBRE_MAX_PINNED="1")
    try:
        report = import_vault(svc, vault)
        got = _by_original(svc)
    finally:
        svc.close()
    assert report.pinned == ["说话要直接"] and report.kept_at_10 == ["生日"]  # the more activated one keeps it
    assert got["a1b2c3d4e5f6"].pinned and not got["b2c3d4e5f6a1"].pinned
    assert got["b2c3d4e5f6a1"].importance == 10


def test_plain_breath_finds_imported_memories_but_not_the_companions_reflections(vault, svc):
    import_vault(svc, vault)
    got = _by_original(svc)
    found = svc.breath(BreathRequest("我能吃芒果吗"), touch=False)
    assert found.cards[0].id == got["aa11bb22cc33"].id
    assert found.cards[0].evidence == "「再说一次哦，我对芒果过敏，吃了会起疹子。」"
    feel = got["feel_202605012205_V035"].id
    plain = svc.breath(BreathRequest("看她熬到凌晨我有点心疼", max_results=10), touch=False)
    assert feel not in {c.id for c in plain.cards + plain.pinned}
    asked = svc.breath(BreathRequest("看她熬到凌晨我有点心疼", domain=FEEL_DOMAIN), touch=False)
    assert asked.cards and asked.cards[0].id == feel
    # a letter (this one sealed until next new year there) is read when asked for, never shown unasked
    letter = got["9e8d7c6b5a41"].id
    for words in ("下雨的晚上想起我们第一次聊天", "你上次是不是心疼我熬夜了"):
        assert letter not in {c.id for c in svc.breath(BreathRequest(words, max_results=10), touch=False).cards}
    assert svc.breath(BreathRequest("下雨的晚上想起我们第一次聊天", domain="letter"), touch=False).cards[0].id == letter
    # a year on, the day's 今日纪念 card is a memory of that day, never the companion's reflection of it
    year_on = dt.datetime(2027, 5, 1, 12, tzinfo=dt.timezone.utc)
    card = svc.breath(BreathRequest("今天好累"), now=year_on, touch=False).anniversary
    assert card is not None and card.id == got["3f9a0c12ab4e"].id
    svc.edit(got["3f9a0c12ab4e"].id, archived=True)
    assert svc.breath(BreathRequest("今天好累"), now=year_on, touch=False).anniversary is None


def test_every_bad_file_is_refused_by_name_and_the_rest_import(vault, svc):
    buckets = vault / "buckets"
    (buckets / "dynamic" / "生活" / "huge_ab12ab12ab12.md").write_bytes(
        b"---\nid: ab12ab12ab12\n---\n" + "长".encode() * (MAX_BUCKET_BYTES // 3 + 1))
    outside = vault.parent / "outside.md"
    outside.write_text("---\nid: 0123456789ab\n---\n\n不该被读到。\n", encoding="utf-8")
    os.symlink(outside, buckets / "dynamic" / "生活" / "link_0123456789ab.md")
    os.symlink(vault.parent, buckets / "dynamic" / "linked-folder")
    report = import_vault(svc, vault)
    refused = dict(report.refused)
    for path, why in BROKEN.items():
        assert why in refused[path]
    assert "over 1 MB" in refused["dynamic/生活/huge_ab12ab12ab12.md"]
    assert "symbolic link" in refused["dynamic/生活/link_0123456789ab.md"]
    assert "symbolic link" in refused["dynamic/linked-folder"]
    assert report.added == 12 and "不该被读到" not in {m.content for m in svc.store.list(archived=None)}


def test_the_export_zip_imports_as_the_folder_does(vault, tmp_path, svc, embedder):
    zipped = import_vault(svc, export_zip(tmp_path / "export.zip"))
    folder_svc = _service(tmp_path / "folder", embedder)
    try:
        folder = import_vault(folder_svc, vault)
        folder_ids = {m.id for m in folder_svc.store.list(archived=None)}
    finally:
        folder_svc.close()
    assert zipped.added == folder.added == 12 and {m.id for m in svc.store.list(archived=None)} == folder_ids
    assert zipped.quoted == folder.quoted == 3 and not zipped.notes[:-1]


def test_the_zip_is_checked_against_its_manifest_member_by_member(tmp_path, svc):
    files = export_files()
    launch = next(n for n in files if n.endswith("3f9a0c12ab4e.md"))
    mango = next(n for n in files if n.endswith("aa11bb22cc33.md"))
    changed = dict(files)
    changed[launch] = files[launch].replace("凌晨两点".encode(), "凌晨三点".encode())  # after the manifest
    changed["buckets/dynamic/生活/extra_aaaaaaaaaaaa.md"] = b"---\nid: aaaaaaaaaaaa\n---\n\nnot listed\n"
    changed["buckets/../../escape_bbbbbbbbbbbb.md"] = b"---\nid: bbbbbbbbbbbb\n---\n\nescape\n"
    changed["buckets/dynamic/生活/huge_dddddddddddd.md"] = b"---\nid: dddddddddddd\n---\n\n" + b"x" * MAX_BUCKET_BYTES
    del changed[mango]  # listed, but not in the zip
    listed = {**files, **{name: changed[name] for name in ("buckets/../../escape_bbbbbbbbbbbb.md",
                                                          "buckets/dynamic/生活/huge_dddddddddddd.md")}}
    path = export_zip(tmp_path / "export.zip", changed, listed=listed,
                      symlinks={"buckets/dynamic/生活/link_cccccccccccc.md": "/etc/passwd"})
    report = import_vault(svc, path)
    refused = dict(report.refused)
    assert "does not match backup_manifest.json" in refused[launch]
    assert "not listed" in refused["buckets/dynamic/生活/extra_aaaaaaaaaaaa.md"]
    assert "leaves the export's folder" in refused["buckets/../../escape_bbbbbbbbbbbb.md"]
    assert "symbolic link" in refused["buckets/dynamic/生活/link_cccccccccccc.md"]
    assert "not in the zip" in refused[mango]
    assert "over 1 MB" in refused["buckets/dynamic/生活/huge_dddddddddddd.md"]
    assert report.added == 10  # the twelve, less the changed one and the missing one

    unlisted = import_vault(svc, export_zip(tmp_path / "bare.zip", export_files(), with_manifest=False),
                            dry_run=True)
    assert any("no backup_manifest.json" in n for n in unlisted.notes)


def test_the_cli_shows_the_plan_then_imports_and_the_dashboard_names_the_origin(vault, tmp_path):
    env = ombre_env(tmp_path)
    dry = subprocess.run(OMBRE + ["memories", "import", "--from", "ombre-brain", str(vault), "--dry-run"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert dry.returncode == 4, dry.stderr  # some files refused, named; the rest would import
    assert "would import 12 memories" in dry.stdout and "pinned (2): 说话要直接; 生日" in dry.stdout
    for path in BROKEN:
        assert path in dry.stdout
    assert "a plan resolved there" in dry.stdout and "tombstone" in dry.stdout
    done = subprocess.run(OMBRE + ["memories", "import", "--from", "ombre-brain", str(vault), "--json"],
                          env=env, capture_output=True, text=True, timeout=300)
    report = json.loads(done.stdout)
    assert done.returncode == 4 and report["added"] == 12 and len(report["refused"]) == 4
    listed = json.loads(subprocess.run(OMBRE + ["memories", "list", "--json"], env=env, capture_output=True,
                                       text=True, timeout=120).stdout)
    launch = next(m for m in listed if "盯着日志" in m["content"])
    server = Server(tmp_path)
    try:
        page = httpx.get(f"{server.url}/ui/memories/{launch['id']}", timeout=30).text
        overview = httpx.get(f"{server.url}/ui/memories", timeout=30).text
    finally:
        server.stop()
    assert "ombre-brain · dynamic/工作/2026-05-01 14-23-05 第一次上线_3f9a0c12ab4e.md" in page
    assert "3f9a0c12ab4e" in page and 'class="badge origin">ombre-brain<' in overview


def test_a_path_that_is_no_vault_is_a_clear_error(tmp_path):
    env = ombre_env(tmp_path)
    (tmp_path / "notes").mkdir()
    out = subprocess.run(OMBRE + ["memories", "import", "--from", "ombre-brain", str(tmp_path / "notes")],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "holds none of Ombre-Brain's folders" in out.stderr and "hint:" in out.stderr
    folder = subprocess.run(OMBRE + ["memories", "import", str(tmp_path / "notes")], env=env, capture_output=True,
                            text=True, timeout=120)
    assert folder.returncode == 2 and "--from ombre-brain" in folder.stderr


def test_the_import_is_the_same_on_postgresql(vault, tmp_path, embedder, postgres):
    from tests.conftest import fresh_database

    svc = _service(tmp_path, embedder, OMBRE_DB=fresh_database(postgres))
    try:
        first, again = import_vault(svc, vault), import_vault(svc, vault)
        got = _by_original(svc)
        found = svc.breath(BreathRequest("我能吃芒果吗"), touch=False)
    finally:
        svc.close()
    assert first.added == 12 and again.added == 0 and len(got) == 12 and first.embedded == 24
    assert got["7c1d2e3f4a5b"].evidence.quote == "以后每周五晚上九点我们视频好不好？"
    assert found.cards[0].id == got["aa11bb22cc33"].id


def test_odd_but_readable_fields_import_and_a_corrupt_zip_member_is_refused_alone(vault, tmp_path, svc, embedder):
    odd = vault / "buckets" / "dynamic" / "生活" / "2026-04-05 10-00-00 怪_abcabcabcabc.md"
    odd.write_text("---\nid: abcabcabcabc\ncreated: 0001-01-01\nlast_active: '2026-04-05T10:00:00+08:00'\n"
                   "activation_count: 1.0e+20\nsource_refs:\n- ref: [not, a, name]\n  ranges: 5\n"
                   "type: dynamic\n---\n\n她周末喜欢去爬山。\n", encoding="utf-8")
    report = import_vault(svc, vault)
    m = _by_original(svc)["abcabcabcabc"]  # a placeholder date, an absurd count, refs of the wrong shape
    assert m.created == "2026-04-05T02:00:00+00:00" and m.activation_count == 2**31 - 1
    assert m.evidence.quote is None and report.added == 13

    files = export_files()
    path = export_zip(tmp_path / "export.zip", files, stored=True)
    data = path.read_bytes()
    marker = "觉得特别踏实".encode()  # in the bucket only (its source says it otherwise)
    at = data.index(marker)
    path.write_bytes(data[:at] + b"X" + data[at + 1 :])  # one byte of one member flipped: its CRC fails
    fresh = _service(tmp_path / "z", embedder)
    try:
        again = import_vault(fresh, path, dry_run=True)
    finally:
        fresh.close()
    launch = next(n for n in files if n.endswith("3f9a0c12ab4e.md"))
    assert "cannot be read from the zip" in dict(again.refused)[launch]
    assert sum(again.by_type.values()) == 11
