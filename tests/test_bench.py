"""Every bench script still runs against the package as it is now, on tiny sizes: a bench that drifted from
an API it imports (as hook_latency.py once did from breath_latency.build) fails here, not on the day its
figures are wanted. The figures themselves are the full runs' job (bench/out/, quoted in the README)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

BENCH = REPO / "bench"
RUNS = {
    "breath_latency.py": (["--sizes", "300", "--queries", "5"], "300 chats with context"),
    "hook_latency.py": (["--memories", "300", "--runs", "3"], "service hung"),
    "cost_replay.py": (["--turns", "40"], "dual-zone (hook) + diet/forge"),
    "forge_speed.py": (["--mb", "1", "--runs", "1"], "forge --squash"),
    "distill_eval.py": ([], "distill test"),
    "recall_eval.py": (["--sets", "companion,memdaily", "--limit", "3"], "sign test"),
    "brain_import.py": (["--memories", "60", "--questions", "5"], "imported from Ombre-Brain"),
}


@pytest.mark.parametrize("script", sorted(RUNS))
def test_the_bench_runs_on_tiny_sizes(script, tmp_path):
    args, expected = RUNS[script]
    env = dict(os.environ, PYTHONPATH=str(BENCH), OMBRE_BENCH_CACHE=str(tmp_path / "vectors.pkl"),
               HOME=str(tmp_path))
    done = subprocess.run([sys.executable, str(BENCH / script), *args], cwd=BENCH, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert expected in done.stdout, done.stdout[-2000:]
