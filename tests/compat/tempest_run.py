"""Tempest (upstream's, pinned by tools/tempest.sh) against a Moorage cloud
(``tests.compat.tempest_cloud``), and its figures: what ran, passed, failed, and what was
skipped, each with its reason.

The scope is issue 24's: ``tempest.api.compute`` (flavors, servers and their actions,
keypairs, server groups, limits, quotas, availability zones, instance actions, images,
and the admin tests: hypervisors, services, aggregates, migrations, quotas) and
``tempest.api.image.v2``. What does not run is in ``tempest_not_run.txt``, each line with
its reason; Tempest skips by itself what the feature flags say Moorage lacks.

``python -m tests.compat.tempest_run [--workdir DIR] [--concurrency N] [--regex R]``
prints the figures (docs/compatibility.md has the last ones); ``./dev tempest`` runs it
as a test (tests/compat/test_tempest.py).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from tests import venvs
from tests.compat import tempest_cloud

SCOPE = (r"^tempest\.api\.(compute\.(flavors|servers|keypairs|limits|test_quotas|"
         r"test_versions|admin|images)|image\.v2)")
NOT_RUN = Path(__file__).with_name("tempest_not_run.txt")
VENV_ENV = "MOORAGE_TEMPEST_VENV"
HOW_TO_CREATE = ("Create it with tools/tempest.sh (./dev tempest does), or point "
                 f"{VENV_ENV} at a venv holding tempest.")
# A test id's tail of tags: "test_x[id-...,smoke]".
_TAGS = re.compile(r"\[.*\]$")

# Read Tempest's subunit stream in its own venv (python-subunit and testtools are
# Tempest's dependencies, not Moorage's): one JSON line per test, its status and reason.
_READ_STREAM = """
import json, sys, subunit, testtools
results = {}
def keep(test):
    details = test["details"]
    reason = details["reason"].as_text() if "reason" in details else ""
    if test["status"] != "skip" and test["status"] != "success":
        reason = "".join(d.as_text() for n, d in details.items()
                         if n == "traceback")[-2000:]
    results[test["id"]] = [test["status"], reason]
stream = subunit.ByteStreamToStreamResult(sys.stdin.buffer, non_subunit_name="stdout")
collect = testtools.StreamToDict(keep)
collect.startTestRun(); stream.run(collect); collect.stopTestRun()
print(json.dumps(results))
"""


class TempestMissing(RuntimeError):
    pass


def venv_path() -> Path:
    """The tempest venv: $MOORAGE_TEMPEST_VENV, else tools/tempest.sh's default place."""
    return venvs.venv_path(VENV_ENV, "tempest-venv")


def venv_tool(name: str) -> Path:
    """An executable of the tempest venv (tempest, python)."""
    return venvs.executable(venv_path(), name, TempestMissing, HOW_TO_CREATE)


@dataclass
class Results:
    passed: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # test: its traceback's tail
    skipped: dict[str, str] = field(default_factory=dict)  # test: Tempest's reason

    @property
    def ran(self) -> int:
        return len(self.passed) + len(self.failed)

    @property
    def pass_ratio(self) -> float:
        return len(self.passed) / self.ran if self.ran else 0.0

    def to_json(self) -> dict[str, object]:
        return {"ran": self.ran, "passed": len(self.passed), "failed": sorted(self.failed),
                "skipped": self.skipped, "pass_ratio": round(self.pass_ratio, 4)}


def not_run_entries() -> list[tuple[str, str]]:
    """The not-run list: (regular expression, reason) per line."""
    entries = []
    for line in NOT_RUN.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        pattern, _, reason = line.partition("#")
        entries.append((pattern.strip(), reason.strip()))
    return entries


def _workspace(directory: Path) -> Path:
    """A Tempest workspace: its stestr configuration, pointing at the venv's tests."""
    package = subprocess.run(
        [str(venv_tool("python")), "-c",
         "import pathlib, tempest; print(pathlib.Path(tempest.__file__).parent)"],
        capture_output=True, text=True, check=True).stdout.strip()
    directory.mkdir(parents=True, exist_ok=True)
    (directory / ".stestr.conf").write_text(
        f"[DEFAULT]\ntest_path={package}/test_discover\ntop_dir={package}\n"
        "group_regex=([^\\.]*\\.)*\n")
    return directory


def run(cloud: tempest_cloud.TempestCloud, workdir: Path, *, concurrency: int = 2,
        regex: str = SCOPE) -> Results:
    """Run Tempest's ``regex`` (less the not-run list) against ``cloud``."""
    tempest_cloud.write_tempest_config(cloud, workdir / "etc" / "tempest.conf")
    workspace = _workspace(workdir / "workspace")
    stream = workdir / "tempest.subunit"
    environment = {**os.environ, "TEMPEST_CONFIG_DIR": str(workdir / "etc")}
    with stream.open("wb") as output:
        # Its exit status says whether every test passed: the figures below say more.
        subprocess.run([str(venv_tool("tempest")), "run", "--subunit",
                        "--concurrency", str(concurrency), "--regex", regex,
                        "--exclude-list", str(NOT_RUN)],
                       cwd=workspace, env=environment, stdout=output,
                       stderr=(workdir / "tempest-run.err").open("wb"),
                       stdin=subprocess.DEVNULL, check=False, timeout=3600)
    with stream.open("rb") as source:
        read = subprocess.run([str(venv_tool("python")), "-c", _READ_STREAM],
                              stdin=source, capture_output=True, check=True)
    results = Results()
    for test, (status, reason) in json.loads(read.stdout).items():
        name = _TAGS.sub("", test)
        if status == "success":
            results.passed.append(name)
        elif status == "skip":
            results.skipped[name] = reason
        elif status in ("fail", "uxsuccess"):
            results.failed[name] = reason
    return results


def report(results: Results) -> str:
    """The figures, and each failure with the last line of its traceback."""
    lines = [f"ran {results.ran}, passed {len(results.passed)}, failed "
             f"{len(results.failed)} ({results.pass_ratio:.1%} passed); skipped "
             f"{len(results.skipped)}; not run: {len(not_run_entries())} entries of "
             f"{NOT_RUN.name}"]
    reasons: dict[str, int] = {}
    for reason in results.skipped.values():
        reasons[reason] = reasons.get(reason, 0) + 1
    lines += ["skipped, by reason:"] + [f"  {count:4} {reason}" for reason, count in
                                        sorted(reasons.items(), key=lambda r: -r[1])]
    lines.append("failed:")
    for test, traceback in sorted(results.failed.items()):
        last = [line for line in traceback.strip().splitlines() if line.strip()]
        lines.append(f"  {test}\n      {last[-1].strip()[:300] if last else ''}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--regex", default=SCOPE)
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = parser.parse_args()
    try:
        venv_tool("tempest")
    except TempestMissing as exc:
        sys.exit(str(exc))
    workdir = (args.workdir or Path(tempfile.mkdtemp(prefix="moorage-tempest-"))).resolve()
    with tempest_cloud.running(workdir / "cloud") as cloud:
        results = run(cloud, workdir, concurrency=args.concurrency, regex=args.regex)
    print(report(results))
    if args.json is not None:
        args.json.write_text(json.dumps(results.to_json(), indent=1) + "\n")


if __name__ == "__main__":
    main()
