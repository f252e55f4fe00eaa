"""Services refuse bad settings at start in one line naming the option and its file, exit 1."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from moorage import keystone
from moorage.cli.listen import claim_port
from moorage.placement.launcher import PlacementProcess, free_port


def _run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "moorage", "placement", *args],
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize(("args", "message"), [
    # --port 0: no test depends on the default port (8778) being free.
    (["serve", "--port", "0", "--db", "foo://x"], "unsupported database URL 'foo://x'"),
    (["serve", "--port", "99999"], "[placement_server] port = 99999"),
    (["serve", "--port", "0", "--db", "sqlite:////nonexistent/dir/p.sqlite"],
     "cannot use the placement database sqlite:////nonexistent/dir/p.sqlite"),
    (["db", "sync", "--db", "postgresql://nobody:secret@127.0.0.1:1/x"],
     "cannot use the placement database postgresql://nobody:***@127.0.0.1:1/x"),
    (["serve", "--config-file", "/nonexistent.conf"], "/nonexistent.conf"),
])
def test_bad_settings_are_one_line_errors(args: list[str], message: str) -> None:
    result = _run(*args)
    assert result.returncode == 1
    assert message in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert "secret" not in result.stderr


def test_a_busy_port_is_refused_not_shared(tmp_path: Path) -> None:
    server = PlacementProcess(tmp_path / "first").start()
    try:
        result = _run("serve", "--port", str(server.port), "--db",
                      f"sqlite:///{tmp_path / 'second.sqlite'}", "--auth-strategy", "noauth2")
        assert result.returncode == 1
        assert f"cannot listen on 127.0.0.1:{server.port}" in result.stderr
    finally:
        server.stop()


def test_a_port_claimed_by_a_server_still_starting_is_refused(tmp_path: Path) -> None:
    """Two servers started at once both find the port free; granian's SO_REUSEPORT
    would then let both bind it and split the connections between two databases.
    The claim a server holds from before its probe until it stops refuses the second."""
    port = free_port()
    with claim_port("127.0.0.1", port):  # a server between its probe and its bind
        result = _run("serve", "--port", str(port), "--db",
                      f"sqlite:///{tmp_path / 'second.sqlite'}", "--auth-strategy", "noauth2")
    assert result.returncode == 1
    assert (f"cannot listen on 127.0.0.1:{port}: Address already in use (another Moorage "
            "server has claimed it)") in result.stderr
    assert not (tmp_path / "second.sqlite").exists()  # refused before anything started


def test_a_serving_server_keeps_its_claim(tmp_path: Path) -> None:
    server = PlacementProcess(tmp_path / "first").start()
    try:
        with (pytest.raises(RuntimeError, match="another Moorage server has claimed it"),
              claim_port("127.0.0.1", server.port)):
            pass
    finally:
        server.stop()
    with claim_port("127.0.0.1", server.port):  # released when the server stopped
        pass


def test_db_sync_reports_the_revisions(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'p.sqlite'}"
    first = _run("db", "sync", "--db", url)
    assert first.returncode == 0 and "empty -> 0001" in first.stdout
    again = _run("db", "sync", "--db", url)
    assert "0001 -> 0001" in again.stdout


SCHEDULER_CONFIGS = {
    "a misspelt host filter": (
        "[filter_scheduler]\nenabled_filters = ComputeFilter,RamFiltr\n",
        "[filter_scheduler] enabled_filters in {conf}: unknown RamFiltr; available: "
        "ComputeFilter, AvailabilityZoneFilter, ImagePropertiesFilter"),
    "a prefilter switch that is no boolean": (
        "[scheduler]\nimage_metadata_prefilter = maybe\n",
        "[scheduler] image_metadata_prefilter in {conf}: Unexpected boolean value 'maybe'; "
        "allowed: true or false"),
    "an attempt count that is no number": (
        "[scheduler]\nmax_attempts = many\n",
        "[scheduler] max_attempts in {conf}: "),
}


@pytest.mark.parametrize("service", [["api", "serve", "--port", "0"], ["conductor", "serve"],
                                     ["serve", "--port", "0", "--placement-port", "0"]])
@pytest.mark.parametrize("case", sorted(SCHEDULER_CONFIGS))
def test_a_bad_scheduler_option_stops_the_service_at_start(
        tmp_path: Path, service: list[str], case: str) -> None:
    """Not at the first boot, and not as a dead worker: one line, exit 1, nothing served."""
    text, message = SCHEDULER_CONFIGS[case]
    conf = tmp_path / "moorage.conf"
    conf.write_text("[database]\n"
                    f"connection = sqlite:///{tmp_path / 'api.sqlite'}\n{text}")
    result = subprocess.run([sys.executable, "-m", "moorage", *service, "--config-file",
                             str(conf)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr.strip() == result.stderr.strip().splitlines()[0]
    assert message.format(conf=conf) in result.stderr
    assert "serving" not in result.stdout + result.stderr


# Every refusal at start names the option and the file that set it: service ->
# (configuration, the start of the message after the file).
START_REFUSALS = [
    (["placement", "serve", "--port", "0"], "[placement_database]\nconnection = foo://x\n",
     "[placement_database] connection in {conf}: unsupported database URL 'foo://x'"),
    (["placement", "serve", "--port", "0"],
     "[placement_database]\nconnection = user:secret@nowhere\n",
     "[placement_database] connection in {conf}: not a database URL"),
    (["placement", "serve"], "[placement_server]\nport = 99999\n",
     "[placement_server] port in {conf}: "),
    (["api", "serve", "--port", "0"], "[database]\nconnection = foo://x\n",
     "[database] connection in {conf}: unsupported database URL 'foo://x'"),
    (["api", "serve", "--port", "0"], "[api]\ncapability_host_floor = -3\n",
     "[api] capability_host_floor in {conf}: "),
    (["api", "serve", "--port", "0"], "[api]\nauth_strategy = nope\n",
     "[api] auth_strategy in {conf}: "),
    (["conductor", "serve"], "[database]\nconnection = foo://x\n",
     "[database] connection in {conf}: unsupported database URL 'foo://x'"),
    (["serve", "--port", "0", "--placement-port", "0"], "[scheduler]\nmax_attempts = 0\n",
     "[scheduler] max_attempts in {conf}: "),
]


@pytest.mark.parametrize(("service", "text", "message"), START_REFUSALS,
                         ids=[f"{' '.join(s[:2])}: {t.split(chr(10))[1]}"
                              for s, t, _ in START_REFUSALS])
def test_every_start_refusal_names_the_option_and_its_file(
        tmp_path: Path, service: list[str], text: str, message: str) -> None:
    conf = tmp_path / "moorage.conf"
    conf.write_text(text)
    result = subprocess.run([sys.executable, "-m", "moorage", *service, "--config-file",
                             str(conf)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1, result.stdout + result.stderr
    assert message.format(conf=conf) in result.stderr, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert "secret" not in result.stderr
    assert "serving" not in result.stdout + result.stderr


HIDE_KEYSTONEMIDDLEWARE = """\
# Loaded at interpreter start (PYTHONPATH): keystonemiddleware is installed in the
# test environment; a None entry in sys.modules makes importing it fail and
# importlib.util.find_spec answer None, as on a host where it is not installed.
import sys
sys.modules["keystonemiddleware"] = None
"""


@pytest.mark.parametrize("service", [["placement", "serve"], ["api", "serve"]])
def test_keystone_without_keystonemiddleware_stops_before_listening(
        tmp_path: Path, service: list[str]) -> None:
    """auth_strategy = keystone is the default: without keystonemiddleware installed the
    service says so in one line and exits 1 before it listens (it used to print
    "serving", listen, and lose its worker on the first import)."""
    port = free_port()
    conf = tmp_path / "moorage.conf"
    conf.write_text(f"[database]\nconnection = sqlite:///{tmp_path / 'api.sqlite'}\n"
                    f"[placement_database]\nconnection = sqlite:///{tmp_path / 'p.sqlite'}\n"
                    f"[placement_server]\nport = {port}\n")
    argv = [*service, "--config-file", str(conf)]
    if service[0] == "api":
        argv += ["--port", str(port)]
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / "sitecustomize.py").write_text(HIDE_KEYSTONEMIDDLEWARE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(hidden), *filter(None, [os.environ.get("PYTHONPATH")])])}
    result = subprocess.run([sys.executable, "-m", "moorage", *argv], capture_output=True,
                            text=True, timeout=60, env=env)
    assert result.returncode == 1, result.stdout + result.stderr
    # The error is the last line (the database's start-up log may come before it), as
    # the service's log writes it: oslo.log's prefix, then the message.
    last = result.stderr.strip().splitlines()[-1]
    assert last.endswith(" ERROR moorage.cli.main [-] " + keystone.MISSING), last
    assert "Traceback" not in result.stderr
    assert "serving" not in result.stdout
    with socket.socket() as probe:  # nothing listened
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(("127.0.0.1", port))
