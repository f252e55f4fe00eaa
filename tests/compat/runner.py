"""Run upstream placement's gabbi suite against Moorage's placement server.

Each YAML file gets a fresh server (its own SQLite database, or with ``--postgresql
URL`` its own PostgreSQL database made with that admin URL), configured the way
the file's fixture configures upstream's service (legacy or secure-RBAC policy
defaults, an open policy file, CORS), then populated and named by the matching
function of ``tests.compat.fixtures``; upstream's own ``gabbi-run`` from the
compat venv then sends the file's requests over HTTP.

    .venv/bin/python -m tests.compat.runner [-v] [-j JOBS] [--postgresql URL] [NAME ...]

prints one line per file (passed and failed tests) and the total.
``tests/compat/test_gabbi.py`` runs the whole suite once under pytest.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
import yaml

from moorage.db.engine import normalize_url
from moorage.placement.launcher import PlacementProcess, ServerStartError
from moorage.placement.policy import ADMIN_API, list_rules
from tests.compat import upstream
from tests.compat.fixtures import FIXTURES, FixtureError, FixtureFunction

DEFAULT_FIXTURE = "APIFixture"
SECURE_RBAC = "SecureRBACPolicyFixture"
OPEN_POLICY = "OpenPolicyFixture"
CORS = "CORSFixture"
# What upstream's CORSFixture configures.
CORS_OPTIONS = {"allowed_origin": "http://valid.example.com",
                "allow_headers": "openstack-api-version"}

GABBI_TIMEOUT = 300
# A port picked free can be taken before the server binds it (other test runs).
START_ATTEMPTS = 3

# The failures this runner is known to report, with the reason each cannot pass
# over real HTTP; docs/compatibility.md lists the same. Keyed (file, test name).
KNOWN_FAILURES: dict[tuple[str, str], str] = {
    ("basic-http.yaml", "bad content length not int"): (
        "client-side: gabbi 4's HTTP client (httpx) refuses to send the header "
        "'content-length: hi mom' (LocalProtocolError: bad Content-Length), so "
        "the request never reaches the server; upstream misses it over HTTP too."
    ),
}

# gabbi-run's concise reporter: "... <mark> gabbi-runner.<file>_<test>[: desc]".
_OUTCOME = re.compile(r"^\.\.\. (?P<mark>✓|✗|E|-|o|!) gabbi-runner\.(?P<name>.*)$", re.M)
PASSED = "✓"


@dataclass(frozen=True)
class FileResult:
    """One YAML file's outcome: which tests passed, which did not and why."""

    file: str
    fixture: str
    total: int
    passed: tuple[str, ...]
    failed: tuple[str, ...]
    output: str  # gabbi-run's report, with the failures' details
    seconds: float

    def line(self) -> str:
        return (f"{self.file:50s} {len(self.passed):4d} passed {len(self.failed):3d} failed"
                f"  [{self.fixture}, {self.seconds:.1f}s]")


def fixture_of(suite: Mapping[str, Any]) -> str:
    """The fixture a YAML file names (upstream's gabbi-run ignores the line)."""
    fixtures = suite.get("fixtures") or [DEFAULT_FIXTURE]
    return str(fixtures[0])


def server_config(fixture: str, workdir: Path) -> dict[str, dict[str, object]]:
    """The service configuration upstream's fixture of this name sets up."""
    config: dict[str, dict[str, object]] = {
        "oslo_policy": {"enforce_new_defaults": fixture == SECURE_RBAC},
    }
    if fixture == OPEN_POLICY:
        # Every rule but the base admin one lets anybody in, as upstream's fixture.
        rules = {rule.name: "@" for rule in list_rules() if rule.name != ADMIN_API}
        policy_file = workdir / "policy.yaml"
        policy_file.write_text(yaml.safe_dump(rules))
        config["oslo_policy"]["policy_file"] = str(policy_file)
    if fixture == CORS:
        config["cors"] = dict(CORS_OPTIONS)
    return config


@contextlib.contextmanager
def postgresql_database(admin_url: str) -> Iterator[str]:
    """A fresh PostgreSQL database made with ``admin_url`` (whose user may CREATE
    DATABASE), dropped afterwards."""
    admin = sa.create_engine(normalize_url(admin_url), isolation_level="AUTOCOMMIT")
    name = f"moorage_gabbi_{uuid.uuid4().hex[:12]}"
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
        try:
            yield sa.engine.make_url(normalize_url(admin_url)).set(
                database=name).render_as_string(hide_password=False)
        finally:
            with admin.connect() as conn:
                conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        admin.dispose()


def start_server(workdir: Path, config: Mapping[str, Mapping[str, object]],
                 database_url: str | None = None) -> PlacementProcess:
    for attempt in range(1, START_ATTEMPTS + 1):
        server = PlacementProcess(workdir / f"server-{attempt}", config=config,
                                  database_url=database_url)
        try:
            return server.start()
        except ServerStartError as error:
            if "Address already in use" not in str(error) or attempt == START_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


def parse_outcomes(output: str, test_names: list[str]) -> tuple[list[str], list[str]]:
    """(passed, failed) test names from gabbi-run's report.

    Outcomes come in the file's order, so they are named by the YAML's own test
    names; a test without an outcome (gabbi-run stopped) counts as failed.
    """
    marks = [m["mark"] for m in _OUTCOME.finditer(output)]
    passed, failed = [], []
    for index, name in enumerate(test_names):
        (passed if index < len(marks) and marks[index] == PASSED else failed).append(name)
    if len(marks) > len(test_names):
        failed.append(f"({len(marks) - len(test_names)} outcomes more than tests)")
    return passed, failed


def run_file(path: Path, postgresql: str | None = None) -> FileResult:
    """One YAML file against one fresh, suitably configured and populated server (on
    a fresh database made with the ``postgresql`` admin URL when given)."""
    started = time.monotonic()
    suite = yaml.safe_load(path.read_text())
    fixture = fixture_of(suite)
    test_names = [str(test["name"]) for test in suite["tests"]]
    gabbi_run = str(upstream.venv_tool("gabbi-run"))
    server_log = ""
    with contextlib.ExitStack() as stack:
        workdir = Path(stack.enter_context(
            tempfile.TemporaryDirectory(prefix=f"compat-{path.stem}-")))
        database_url = (stack.enter_context(postgresql_database(postgresql))
                        if postgresql else None)
        try:
            server = start_server(workdir, server_config(fixture, workdir), database_url)
        except ServerStartError as error:
            output = f"the server did not start: {error}"
        else:
            try:
                output = _gabbi_run(gabbi_run, server.url, path, FIXTURES[fixture])
            finally:
                server.stop()
            server_log = server.output()
    passed, failed = parse_outcomes(output, test_names)
    if failed:
        output += "\n-- server log (tail) --\n" + "\n".join(server_log.splitlines()[-40:])
    return FileResult(path.name, fixture, len(test_names), tuple(passed), tuple(failed),
                      output, time.monotonic() - started)


def _gabbi_run(gabbi_run: str, url: str, path: Path, fixture: FixtureFunction) -> str:
    """gabbi-run's report of one file, after the fixture populated the server."""
    try:
        environment = fixture(url)
    except FixtureError as error:
        return f"the data fixture failed: {error}"
    child_env = {k: v for k, v in os.environ.items() if k != "GABBI_FORCE_COLOR"}
    child_env.update(environment)
    try:
        completed = subprocess.run([gabbi_run, url, "--", str(path)], env=child_env,
                                   capture_output=True, text=True, timeout=GABBI_TIMEOUT)
    except subprocess.TimeoutExpired as error:
        return f"gabbi-run did not finish in {GABBI_TIMEOUT}s: {error.output!r}"
    return completed.stdout + completed.stderr


def suite_files(names: Iterable[str] = ()) -> list[Path]:
    """The named YAML files (``inventory``, ``inventory.yaml`` or a path), else all."""
    gabbits = upstream.gabbits_dir()
    chosen = []
    for name in names:
        path = Path(name)
        if not path.exists():
            path = gabbits / (name if name.endswith(".yaml") else f"{name}.yaml")
        chosen.append(path)
    return chosen or sorted(gabbits.glob("*.yaml"))


def default_jobs() -> int:
    # Server start-up and gabbi-run are mostly Python start-up: overlap two per core.
    return 2 * (os.cpu_count() or 1)


def run_suite(files: Iterable[Path], jobs: int | None = None,
              on_result: Callable[[FileResult], None] | None = None, *,
              postgresql: str | None = None) -> list[FileResult]:
    """Run the files, ``jobs`` at a time; results in the files' order. ``postgresql``:
    an admin URL; each file then runs on a PostgreSQL database of its own."""
    files = list(files)
    with ThreadPoolExecutor(max_workers=jobs or default_jobs()) as pool:
        futures = [pool.submit(run_file, path, postgresql) for path in files]
        results = []
        for future in futures:
            results.append(future.result())
            if on_result is not None:
                on_result(results[-1])
    return results


def summary(results: Iterable[FileResult]) -> tuple[int, int]:
    """(passed, total) over the results."""
    results = list(results)
    return sum(len(r.passed) for r in results), sum(r.total for r in results)


def undocumented_failures(results: Iterable[FileResult]) -> list[tuple[str, str]]:
    return [(r.file, name) for r in results for name in r.failed
            if (r.file, name) not in KNOWN_FAILURES]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="YAML files (default: all of them)")
    parser.add_argument("-j", "--jobs", type=int, default=None,
                        help=f"files run at once (default {default_jobs()})")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="print gabbi-run's whole report for every file")
    parser.add_argument("--postgresql", metavar="URL",
                        help="run each file on a fresh PostgreSQL database made with this "
                             "admin URL (default: SQLite)")
    args = parser.parse_args(argv)
    try:
        files = suite_files(args.names)
    except upstream.CompatVenvMissing as error:
        print(error, file=sys.stderr)
        return 2

    def report(result: FileResult) -> None:
        print(result.line(), flush=True)
        if args.verbose or result.failed:
            for name in result.failed:
                print(f"    FAILED {name}")
            if args.verbose:
                print(result.output)

    started = time.monotonic()
    results = run_suite(files, args.jobs, on_result=report, postgresql=args.postgresql)
    passed, total = summary(results)
    print(f"TOTAL {passed}/{total} passed, {total - passed} failed, "
          f"{len(results)} files, {time.monotonic() - started:.0f}s")
    return 0 if passed == total else 1


if __name__ == "__main__":
    sys.exit(main())
