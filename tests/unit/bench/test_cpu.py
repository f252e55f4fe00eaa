"""bench/cpu.py: the CPU of a run's processes by role, and of the machine."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
from cpu import CpuUse, CpuWindow

# Spins about 0.4 s of CPU, says so, then sleeps (a service idle after the burst).
SPIN = ("import sys, time\n"
        "end = time.process_time() + 0.4\n"
        "while time.process_time() < end: pass\n"
        "print('spun', flush=True)\n"
        "time.sleep(60)  # placement serve\n")


def test_a_window_counts_a_childs_cpu_under_the_role_its_command_names() -> None:
    window = CpuWindow({os.getpid(): "client"}).start()
    child = subprocess.Popen([sys.executable, "-c", SPIN], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline() == "spun\n"
        used = window.stop()
    finally:
        child.kill()
        child.wait()
    assert used.by_role["placement"] >= 0.35, used
    assert used.by_role.get("client", 0.0) < used.by_role["placement"]
    assert used.machine_total > 0 and 0 < used.busy <= 1
    assert used.per_boot_ms(100)["placement"] == pytest.approx(
        used.by_role["placement"] * 10)


def test_others_are_what_the_machine_spent_beyond_the_run() -> None:
    quiet = CpuUse({"placement": 1.0}, machine_busy=1.5, machine_total=10.0)
    assert quiet.others == pytest.approx(0.05) and not quiet.disturbed
    busy = CpuUse({"placement": 1.0}, machine_busy=2.0, machine_total=10.0)
    assert busy.others == pytest.approx(0.1) and busy.disturbed
    assert CpuUse({"api": 3.0}, machine_busy=2.0, machine_total=10.0).others == 0.0
