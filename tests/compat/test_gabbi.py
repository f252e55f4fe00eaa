"""Upstream placement's own gabbi suite (79 files, 1316 tests) against Moorage.

The whole suite runs once per session (about three minutes on two cores), one
fresh server per file; see tests/compat/runner.py and docs/compatibility.md.
Needs the compat venv of tools/compat.sh: without it these tests fail, saying so.
"""

from __future__ import annotations

import pytest

from tests.compat import runner, upstream

UPSTREAM_TESTS = 1316
REQUIRED_PASSES = 1300

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]


@pytest.fixture(scope="module")
def results() -> list[runner.FileResult]:
    try:
        files = runner.suite_files()
    except upstream.CompatVenvMissing as error:
        missing = str(error)
    else:
        return runner.run_suite(files)
    pytest.fail(missing, pytrace=False)


def test_upstream_gabbi_suite_passes(results: list[runner.FileResult],
                                     capsys: pytest.CaptureFixture[str]) -> None:
    passed, total = runner.summary(results)
    with capsys.disabled():
        print("\nupstream placement gabbi suite against Moorage:")
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
