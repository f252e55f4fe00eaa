"""The end-of-run banners of tests skipped on purpose (``MOORAGE_TEST_SKIP_*=1``).

They count the skip reports the terminal reporter kept, not a list each test process
fills: under pytest-xdist the tests run in worker processes and only the reports
reach the controller, which prints the summary.
"""

from __future__ import annotations

from typing import Any


def count_not_run(terminalreporter: Any, reason: str) -> int:
    """How many tests of this run were skipped with a reason starting ``reason``."""
    count = 0
    for report in terminalreporter.stats.get("skipped", []):
        # A skip's longrepr is (path, line, "Skipped: <reason>"); a list once it has
        # crossed from a worker.
        longrepr = report.longrepr
        if isinstance(longrepr, tuple | list) and len(longrepr) == 3 and str(
                longrepr[2]).removeprefix("Skipped: ").startswith(reason):
            count += 1
    return count
