"""The host's uptime line, as nova's drivers report it (the ``uptime`` command's output,
which ``GET /os-hypervisors/{id}/uptime`` shows): the time of day, how long the host
has been up, and its load averages. Read from ``/proc/uptime`` and the load averages;
the users count, which ``uptime`` reads from utmp, is left out.
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path

PROC_UPTIME = Path("/proc/uptime")


def uptime_line(now: datetime.time, seconds_up: float,
                loads: tuple[float, float, float]) -> str:
    """`` 08:32:11 up 93 days, 18:25,  load average: 0.20, 0.12, 0.14``."""
    minutes = int(seconds_up // 60)
    days, minutes = divmod(minutes, 24 * 60)
    hours, minutes = divmod(minutes, 60)
    up = f"{hours}:{minutes:02d}" if hours else f"{minutes} min"
    if days:
        up = f"{days} day{'s' if days != 1 else ''}, {up}"
    averages = ", ".join(f"{load:.2f}" for load in loads)
    return f" {now:%H:%M:%S} up {up},  load average: {averages}"


def this_host() -> str:
    """The line of the machine this process runs on."""
    seconds_up = float(PROC_UPTIME.read_text().split()[0])
    one, five, fifteen = os.getloadavg()
    return uptime_line(datetime.datetime.now().time(), seconds_up, (one, five, fifteen))
