"""Upstream placement's own gabbi suite (79 files, 1316 tests) against Moorage.

The whole suite runs twice per session, on SQLite and on PostgreSQL (about a minute
and a half each on two cores), one fresh server and database per file; see
tests/compat/runner.py and docs/compatibility.md.
Needs the compat venv of tools/compat.sh: without it these tests fail, saying so.
"""

from __future__ import annotations

import pytest

from tests.compat import runner, upstream
from tests.conftest import require_postgresql

UPSTREAM_TESTS = 1316
REQUIRED_PASSES = 1300

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def results(request: pytest.FixtureRequest) -> list[runner.FileResult]:
    postgresql = require_postgresql(request) if request.param == "postgresql" else None
    try:
        files = runner.suite_files()
    except upstream.CompatVenvMissing as error:
        missing = str(error)
    else:
        return runner.run_suite(files, postgresql=postgresql)
    pytest.fail(missing, pytrace=False)


def test_upstream_gabbi_suite_passes(results: list[runner.FileResult],
                                     request: pytest.FixtureRequest,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    passed, total = runner.summary(results)
    database = request.node.callspec.params["results"]
    with capsys.disabled():
        print(f"\nupstream placement gabbi suite against Moorage on {database}:")
        for result in results:
            print("  " + result.line())
            for name in result.failed:
                print(f"      FAILED {name}")
        print(f"  TOTAL {passed}/{total} passed")
    assert total == UPSTREAM_TESTS, f"expected upstream's {UPSTREAM_TESTS} tests, found {total}"
    assert passed >= REQUIRED_PASSES, f"only {passed}/{total} upstream gabbi tests pass"


def test_every_failure_is_a_known_one(results: list[runner.FileResult]) -> None:
    """A failure not in KNOWN_FAILURES (and docs/compatibility.md) is a regression."""
    unexpected = runner.undocumented_failures(results)
    details = "\n\n".join(r.output for r in results
                          if any(file == r.file for file, _ in unexpected))
    assert not unexpected, f"new gabbi failures: {unexpected}\n{details[-20000:]}"
