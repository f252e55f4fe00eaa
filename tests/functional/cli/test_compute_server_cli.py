"""``moorage server ...`` against a real cloud: placement, the compute API with its
conductor and scheduler, and compute agents with the fake driver (the
``make_cloud`` fixture of the server tests).

The build reschedules as in the issue's story: the largest host is tried first and
refuses hw_vif_model=e1000 at spawn; ``--wait`` reports that attempt on stderr and
``server show`` explains it afterwards. A build nobody can take ends in ERROR: the
command shows the fault and exits 1; so does a resize with nowhere to go.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.cli_runner import run_moorage
from tests.functional.cli.test_compute_standin import Run
from tests.functional.servers.conftest import Cloud, fake_host, make_cloud

# make_cloud: the server tests' fixture, used here too
__all__ = ["make_cloud"]
E1000 = "COMPUTE_NET_VIF_MODEL_E1000"
VIRTIO = "COMPUTE_NET_VIF_MODEL_VIRTIO"
Moorage = Callable[..., Run]


@pytest.fixture
def cloud(make_cloud: Callable[..., Cloud]) -> Cloud:
    return make_cloud([
        fake_host("big", traits=[VIRTIO], unsupported=[E1000], memory_mb=65536),
        fake_host("small", traits=[VIRTIO, E1000], memory_mb=16384),
        fake_host("tiny", traits=[VIRTIO, E1000], memory_mb=8192),
    ], scheduler={"image_metadata_prefilter": False, "max_attempts": 2})


@pytest.fixture
def moorage(capsys: pytest.CaptureFixture[str], cloud: Cloud) -> Moorage:
    def run(*argv: str) -> Run:
        return run_moorage(capsys, [*argv, "--os-compute-url", cloud.api_url])

    return run


def ok(run: Run) -> Any:
    assert run.code == 0, run.err
    return json.loads(run.out) if run.out.startswith(("{", "[")) else run.out


WAIT = ("--wait", "--wait-interval", "0.05", "--wait-timeout", "120")


def test_server_lifecycle(moorage: Moorage, cloud: Cloud) -> None:
    ok(moorage("flavor", "create", "small", "--ram", "512", "--disk", "1", "-f", "json"))
    ok(moorage("flavor", "create", "medium", "--ram", "1024", "--disk", "1", "-f", "json"))
    ok(moorage("image", "create", "e1000", "--disk-format", "raw", "--property",
               "hw_vif_model=e1000", "-f", "json"))

    # The build: big refuses e1000 at spawn, the build reschedules to small.
    run = moorage("server", "create", "web", "--flavor", "small", "--image", "e1000",
                  *WAIT, "-f", "json")
    server = ok(run)
    assert (server["status"], server["host"]) == ("ACTIVE", "small")
    progress = run.err.splitlines()
    assert progress[0].startswith("server web: BUILD")
    assert any(line.startswith("  attempt 1. big: failed, UnsupportedHardware")
               for line in progress), progress
    assert progress[-1] == "  attempt 2. small: ok" or "server web: ACTIVE on small" in progress

    # server show explains it, by name.
    table = ok(moorage("server", "show", "web"))
    assert "attempts:" in table and "1. big: failed, UnsupportedHardware" in table
    assert "transform_image_metadata: off" in table
    assert ok(moorage("server", "show", "web", "-f", "value", "-c", "host")) == "small\n"

    # Resize (away from small: big refuses e1000, tiny takes it), then confirm.
    run = moorage("server", "resize", "web", "--flavor", "medium", *WAIT)
    assert run.code == 0, run.err
    assert run.err.splitlines()[-1] == "resize done: server web: VERIFY_RESIZE on tiny"
    ok(moorage("server", "resize", "confirm", "web", *WAIT))
    shown = ok(moorage("server", "show", "web", "-f", "json"))
    assert (shown["status"], shown["flavor"], shown["host"]) == ("ACTIVE", "medium", "tiny")
    moves = ok(moorage("server", "migration", "list", "--server", "web", "-f", "json"))
    assert [(m["type"], m["source"], m["destination"]) for m in moves] == [
        ("resize", "small", "tiny")]

    # A migration with nowhere to go (small is disabled, big refuses e1000): exit 1.
    ok(moorage("host", "set", "small", "--disable"))
    run = moorage("server", "migrate", "web", *WAIT)
    assert run.code == 1
    last = run.err.splitlines()[-1]
    assert last.startswith(f"migrate of server {shown['id']} failed: ACTIVE, not "), last
    assert ok(moorage("server", "show", "web", "-f", "value", "-c", "host")) == "tiny\n"
    ok(moorage("host", "set", "small", "--enable"))

    ok(moorage("server", "delete", "web", *WAIT))
    assert ok(moorage("server", "list", "-f", "json")) == []
    assert cloud.guests("small") == cloud.guests("tiny") == []


def test_server_nobody_can_take_ends_in_error(moorage: Moorage) -> None:
    ok(moorage("flavor", "create", "small", "-f", "json"))
    ok(moorage("image", "create", "gold", "--property", "trait:CUSTOM_GOLD=required",
               "-f", "json"))
    run = moorage("server", "create", "web", "--flavor", "small", "--image", "gold", *WAIT)
    assert run.code == 1
    assert "| fault " in run.out and "No valid host was found." in run.out
    last = run.err.splitlines()[-1]
    assert last.startswith("create of server ") and ": ERROR: No valid host was found." in last
    listed = ok(moorage("server", "list", "-f", "json"))
    assert [(s["name"], s["status"], s["host"]) for s in listed] == [("web", "ERROR", None)]
    ok(moorage("server", "delete", "web", *WAIT))
    assert ok(moorage("server", "list", "-f", "json")) == []


def test_disabled_host_is_not_chosen(moorage: Moorage) -> None:
    ok(moorage("flavor", "create", "small", "-f", "json"))
    ok(moorage("image", "create", "plain", "--disk-format", "raw", "-f", "json"))
    ok(moorage("host", "set", "big", "--disable", "--reason", "maintenance"))
    hosts = {h["host"]: h for h in ok(moorage("host", "list", "-f", "json"))}
    assert (hosts["big"]["status"], hosts["small"]["status"]) == ("disabled", "enabled")
    server = ok(moorage("server", "create", "web", "--flavor", "small", "--image", "plain",
                        *WAIT, "-f", "json"))
    assert server["host"] == "small"
    assert "compute_status_filter: forbidden host trait" in server["scheduling"] or any(
        f["name"] == "compute_status_filter" for f in server["scheduling"]["filters"])
    hosts = {h["host"]: h for h in ok(moorage("host", "list", "-f", "json"))}
    assert (hosts["big"]["servers"], hosts["small"]["servers"]) == (0, 1)


def test_dry_runs_and_the_decisions_shown(moorage: Moorage, cloud: Cloud) -> None:
    """--dry-run creates and moves nothing and names the host the real operation then
    takes; `server show` prints the decisions one per line; a dry run with no host
    exits 1 with the reason."""
    ok(moorage("flavor", "create", "small", "--ram", "512", "--disk", "1", "-f", "json"))
    ok(moorage("flavor", "create", "medium", "--ram", "1024", "--disk", "1", "-f", "json"))
    ok(moorage("image", "create", "plain", "--disk-format", "raw", "-f", "json"))
    plan = ok(moorage("server", "create", "web", "--flavor", "small", "--image", "plain",
                      "--dry-run", "-f", "json"))
    assert plan["schedulable"] is True and plan["host"] == "big"
    assert plan["plan"]["decisions"]["weighed"][0]["host"] == "big"
    assert ok(moorage("server", "list", "-f", "json")) == []
    table = ok(moorage("server", "create", "web", "--flavor", "small", "--image", "plain",
                       "--dry-run"))
    assert "build would go to big" in table and "alternates: " in table
    server = ok(moorage("server", "create", "web", "--flavor", "small", "--image", "plain",
                        *WAIT, "-f", "json"))
    assert server["host"] == "big"
    shown = ok(moorage("server", "show", "web"))
    assert "decisions:" in shown and "chosen: big; alternates: small" in shown
    assert "weighed: big 1, small" in shown

    # A resize's dry run: the current host is excluded by the request.
    run = moorage("server", "resize", "web", "--flavor", "medium", "--dry-run")
    assert run.code == 0, run.err
    assert run.out.startswith("resize would go to small\n"), run.out
    assert "request: ignore_hosts: excludes 1 of 3 hosts (1 excluded by the request): big" \
        in run.out
    assert ok(moorage("server", "show", "web", "-f", "json"))["flavor"] == "small"

    # Nowhere to go: every other host disabled.
    ok(moorage("host", "set", "small", "--disable"))
    ok(moorage("host", "set", "tiny", "--disable"))
    run = moorage("server", "migrate", "web", "--dry-run")
    assert run.code == 1
    assert run.out.startswith("migrate would fail: No valid host was found."), run.out
    assert "forbidden host trait COMPUTE_STATUS_DISABLED" in run.out
    assert ok(moorage("server", "show", "web", "-f", "json"))["status"] == "ACTIVE"
    # Bad input: one line, exit 1, nothing written.
    run = moorage("server", "create", "x", "--flavor", "nope", "--image", "plain", "--dry-run")
    assert run.code == 1 and "nope" in run.err and "Traceback" not in run.err
