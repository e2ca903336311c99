"""Ombre-Brain's export zip, as its /api/export writes one (read from its public documentation): the buckets
under `buckets/`, the source files under `sources/`, and `backup_manifest.json` with each file's size and
SHA-256. Built from the fixture vault in tests/data/ombre_brain, with the changes a test asks for."""
from __future__ import annotations

import hashlib
import json
import stat
import zipfile
from pathlib import Path

VAULT = Path(__file__).resolve().parents[1] / "data" / "ombre_brain"


def export_files(vault: Path = VAULT) -> dict[str, bytes]:
    """Every file the export holds, by its path in the zip."""
    buckets = vault / "buckets"
    files: dict[str, bytes] = {}
    for path in sorted(buckets.rglob("*")):
        rel = path.relative_to(buckets).as_posix()
        if path.is_file() and rel.startswith("_sources/"):
            files["sources/" + path.name] = path.read_bytes()
        elif path.is_file() and path.suffix == ".md":
            files["buckets/" + rel] = path.read_bytes()
    files["export_meta.json"] = json.dumps({"version": "test", "exported_at": "2026-05-04T10:00:00"}).encode()
    return files


def manifest(files: dict[str, bytes]) -> bytes:
    entries = [{"path": name, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
               for name, data in sorted(files.items())]
    total = sum(len(d) for d in files.values())
    return json.dumps({"schema_version": 1, "kind": "ombre-brain-backup", "created_at": "2026-05-04T10:00:00",
                       "version": "test", "file_count": len(entries), "total_bytes": total, "files": entries},
                      ensure_ascii=False, indent=2).encode()


def export_zip(dest: Path, files: dict[str, bytes] | None = None, *, listed: dict[str, bytes] | None = None,
               symlinks: dict[str, str] | None = None, with_manifest: bool = True, stored: bool = False) -> Path:
    """Write an export zip: `files` as members, the manifest made from `listed` (default: the same files, so a
    member changed after the manifest was made shows up), and `symlinks` as symbolic-link members."""
    files = export_files() if files is None else files
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
        for name, target in (symlinks or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, target)
        if with_manifest:
            zf.writestr("backup_manifest.json", manifest(files if listed is None else listed))
    return dest
