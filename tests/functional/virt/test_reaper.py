"""The embedded libvirt's QEMU processes are reaped by this process, not left to a
PID 1 that may reap late: a stopped QEMU is gone at once, other orphans are left
alone. Run in a process of its own (a subreaper is one for good)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent("""
    import json, os, signal, subprocess, sys, time
    from moorage.virt.libvirt import reaper

    def orphan(program):
        # sh starts the program in the background and exits: an orphan.
        out = subprocess.run(["sh", "-c", f"{program} 30 >/dev/null 2>&1 & echo $!"],
                             capture_output=True, text=True, check=True).stdout
        return int(out)

    def state(pid):
        try:
            stat = open(f"/proc/{pid}/stat").read()
        except OSError:
            return "gone"
        return stat[stat.rindex(")") + 2]

    adopted = reaper.adopt_orphans(interval=0.02, grace=0.1)
    qemu, other = orphan(sys.argv[1]), orphan(sys.argv[2])
    os.kill(qemu, signal.SIGTERM)
    os.kill(other, signal.SIGTERM)
    deadline = time.monotonic() + 5
    while state(qemu) != "gone" and time.monotonic() < deadline:
        time.sleep(0.02)
    gone_after = 5 - (deadline - time.monotonic())
    time.sleep(0.5)
    print(json.dumps({"adopted": adopted, "qemu": state(qemu), "other": state(other),
                      "seconds": gone_after}))
    os.waitpid(other, 0)
""")


def test_a_stopped_qemu_is_reaped_at_once_and_other_orphans_are_left(
        tmp_path: Path) -> None:
    sleep = shutil.which("sleep")
    assert sleep is not None
    qemu = tmp_path / "qemu-system-test"   # what /proc shows as its command name
    shutil.copy(sleep, qemu)
    other = tmp_path / "some-daemon"
    shutil.copy(sleep, other)
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(qemu), str(other)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["adopted"] is True
    assert seen["qemu"] == "gone" and seen["seconds"] < 2
    # Not a QEMU: a zombie of this process until its owner (here, the script) reaps it.
    assert seen["other"] == "Z"
