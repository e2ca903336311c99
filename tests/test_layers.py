"""The house's floors (docs/architecture.md): every import in src/ombre runs to its own floor or below, and no
module reaches itself through its imports. Read from the source, so a new import that breaks either fails here."""
from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
FLOORS = [
    {"errors", "clock", "wire", "files", "jsonl_log", "tokens", "settings", "client"},  # the ground floor
    {"transcript", "memory"},
    {"window", "inject", "write"},
    {"tunnel"},
    {"app"},  # the wiring layer
    {"cli", "serve", "doctor", "demo", "entry", "__main__"},  # the adapters
]
FLOOR = {part: n for n, parts in enumerate(FLOORS) for part in parts}


def _imports() -> dict[str, set[str]]:
    """Module → the ombre modules it imports (at the top or inside a function)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for path in (SRC / "ombre").rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        package = parts[:-1] if parts[-1] != "__init__" else parts[:-1]
        name = ".".join(parts if parts[-1] != "__init__" else parts[:-1])
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                target = ".".join(base + ([node.module] if node.module else [])) if node.level else node.module
                if not target or not target.startswith("ombre"):
                    continue
                for alias in node.names:
                    full = f"{target}.{alias.name}"
                    graph[name].add(full if (SRC / Path(*full.split("."))).with_suffix(".py").exists()
                                    or (SRC / Path(*full.split("."))).is_dir() else target)
            elif isinstance(node, ast.Import):
                graph[name].update(a.name for a in node.names if a.name.startswith("ombre"))
    return graph


def _part(module: str) -> str:
    return module.split(".")[1] if "." in module else module


def test_every_import_runs_to_its_own_floor_or_below():
    upward = sorted(f"{m} imports {t}" for m, targets in _imports().items() for t in targets
                    if _part(t) != _part(m) and FLOOR[_part(t)] > FLOOR[_part(m)])
    assert not upward, upward


def test_every_part_of_the_package_has_a_floor():
    parts = {_part(m) for m in _imports()} | {_part(t) for ts in _imports().values() for t in ts}
    assert parts - {"ombre"} <= set(FLOOR), parts - set(FLOOR)


def test_no_module_imports_itself_round_a_circle():
    graph = _imports()
    state: dict[str, int] = {}
    circles = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                circles.append(path[path.index(target):] + [target])
            elif target not in state:
                visit(target, path + [target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert not circles, circles
