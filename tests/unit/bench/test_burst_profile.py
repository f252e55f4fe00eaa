"""bench/burst_profile.py: where a role's py-spy samples went."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
from burst_profile import summarise


def test_samples_are_summed_per_role_and_waits_left_out(tmp_path: Path) -> None:
    (tmp_path / "api-10.txt").write_text(
        'process 10:"python -m moorage api serve";run (a/app.py:5);'
        "Scheduler._select (moorage/scheduler/manager.py:9) 6\n"
        'process 10:"x";process 11:"worker";run (a/app.py:5);commit (db.py:3) 2\n'
        # Waiting, not running: not counted at all.
        'process 10:"x";run (a/app.py:5);Condition.wait (threading.py:320) 50\n')
    (tmp_path / "placement-20.txt").write_text("answer (p/app.py:1) 2\n")
    text = summarise([tmp_path / "api-10.txt", tmp_path / "placement-20.txt"], top=5)
    lines = text.splitlines()
    assert lines[0] == "## api: 8 samples, 80.0% of all"
    # Inclusive: the caller of both leaves holds all 8; a frame's line number and
    # directory are dropped, so the two `run` frames are one function.
    assert "  100.0% run (app.py)" in lines
    assert "   75.0% Scheduler._select (manager.py)" in lines
    assert "   25.0% commit (db.py)" in lines
    assert "## placement: 2 samples, 20.0% of all" in lines
    assert not any("Condition.wait" in line for line in lines)
