"""The uptime line nova's drivers report (``GET /os-hypervisors/{id}/uptime``)."""

from __future__ import annotations

import datetime
import re

import pytest

from moorage.virt import host_uptime

LOADS = (0.2, 0.125, 1.5)


@pytest.mark.parametrize(("seconds", "up"), [
    (59, "0 min"),
    (5 * 60 + 59, "5 min"),
    (3600 + 25 * 60, "1:25"),
    (86400 + 3 * 3600 + 7 * 60, "1 day, 3:07"),
    (93 * 86400 + 18 * 3600 + 25 * 60, "93 days, 18:25"),
    (2 * 86400 + 40 * 60, "2 days, 40 min"),
])
def test_the_line_reads_as_uptime_prints_it(seconds: float, up: str) -> None:
    line = host_uptime.uptime_line(datetime.time(8, 32, 11), seconds, LOADS)
    assert line == f" 08:32:11 up {up},  load average: 0.20, 0.12, 1.50"


def test_this_host_reads_proc_uptime() -> None:
    line = host_uptime.this_host()
    assert re.fullmatch(r" \d\d:\d\d:\d\d up .+,  load average: [\d.]+, [\d.]+, [\d.]+",
                        line), line
    seconds = float(host_uptime.PROC_UPTIME.read_text().split()[0])
    if seconds >= 86400:
        assert f"up {int(seconds // 86400)} day" in line
