"""Operators' logging over real processes: placement, the compute API and a compute agent
started as operators start them, each with ``[DEFAULT] log_file``; a boot sent with a
known ``X-OpenStack-Request-ID`` is followed through the three logs by that id."""

from __future__ import annotations

import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from moorage.api.launcher import ComputeApiProcess
from moorage.placement.launcher import PlacementProcess, write_config

TOKEN = "logging-test-service-token"
GLOBAL_ID = f"req-{uuid.uuid4()}"
# One request's line: "<date> <time> <pid> INFO moorage.api.requests [<global> <local>
# <user identity>] <address> "<method> <path>" status: ..."
REQUEST_LINE = re.compile(
    r"^\S+ \S+ \d+ (?P<level>[A-Z]+) moorage\.(?P<service>\w+)\.requests "
    r"\[(?P<global>\S+) (?P<local>\S+) (?P<user>[^\]]*)\] \S+ "
    r"\"(?P<method>[A-Z]+) (?P<path>\S+)\" status: (?P<status>\d+) .*time: [\d.]+ms$")
LOCAL_ID = re.compile(r"req-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@dataclass
class Cloud:
    api: str
    logs: dict[str, Path]

    def lines(self, service: str) -> list[str]:
        return self.logs[service].read_text().splitlines()

    def requests(self, service: str) -> list[re.Match[str]]:
        found = [REQUEST_LINE.match(line) for line in self.lines(service)
                 if ".requests [" in line]
        assert all(found), [line for line in self.lines(service)
                            if ".requests [" in line and not REQUEST_LINE.match(line)]
        return [m for m in found if m is not None]


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cloud]:
    work = tmp_path_factory.mktemp("logging")
    logs = {name: work / f"{name}.log" for name in ("placement", "api", "agent")}
    placement = PlacementProcess(work / "placement", config={
        "DEFAULT": {"log_file": logs["placement"], "debug": True}})
    agent: subprocess.Popen[bytes] | None = None
    with placement:
        api = ComputeApiProcess(work / "api", placement_url=placement.url, config={
            "DEFAULT": {"log_file": logs["api"], "debug": False, "service_token": TOKEN,
                        "report_interval": 1}})
        with api:
            agent_conf = write_config(work / "agent.conf", {
                "DEFAULT": {"host": "kvm1", "compute_driver": "fake", "service_token": TOKEN,
                            "report_interval": 1, "log_file": logs["agent"]},
                "placement": {"endpoint_override": placement.url},
                "fake_driver": {"traits": "COMPUTE_NET_VIF_MODEL_E1000",
                                "supported_image_types": "raw"}})
            with (work / "agent.out").open("wb") as out:
                agent = subprocess.Popen(
                    [sys.executable, "-m", "moorage", "compute", "run", "--config-file",
                     str(agent_conf), "--port", "0", "--api-url", api.url],
                    stdout=out, stderr=subprocess.STDOUT)
            try:
                yield Cloud(api.url + "/v2.1", logs)
            finally:
                agent.terminate()
                agent.wait(timeout=30)


def _boot(cloud: Cloud) -> tuple[str, str]:
    """Boot a server with GLOBAL_ID; (the server's uuid, the boot's local request id)."""
    session = requests.Session()
    session.headers["X-Auth-Token"] = "admin"
    deadline = time.monotonic() + 60
    while not any(s["host"] == "kvm1" and s["state"] == "up"
                  for s in session.get(cloud.api + "/os-services").json()["services"]):
        assert time.monotonic() < deadline, "the agent never registered"
        time.sleep(0.2)
    flavor = session.post(cloud.api + "/flavors", json={"flavor": {
        "name": "small", "vcpus": 1, "ram": 256, "disk": 1}}).json()["flavor"]["id"]
    image = session.post(cloud.api + "/images", json={
        "name": "img", "disk_format": "raw", "container_format": "bare",
        "properties": {"trait:COMPUTE_NET_VIF_MODEL_E1000": "required"}}).json()["id"]
    created = session.post(cloud.api + "/servers", headers={"X-OpenStack-Request-ID": GLOBAL_ID},
                           json={"server": {"name": "vm", "flavorRef": flavor,
                                            "imageRef": image}})
    assert created.status_code == 202, created.text
    server_uuid = created.json()["server"]["id"]
    while (server := session.get(f"{cloud.api}/servers/{server_uuid}").json()["server"]
           )["status"] == "BUILD":
        assert time.monotonic() < deadline, "the server stayed in BUILD"
        time.sleep(0.1)
    assert server["status"] == "ACTIVE", server.get("fault")
    return server_uuid, created.headers["x-openstack-request-id"]


@pytest.fixture(scope="module")
def boot(cloud: Cloud) -> tuple[str, str]:
    return _boot(cloud)


def test_the_boot_request_line_names_both_ids(cloud: Cloud, boot: tuple[str, str]) -> None:
    _uuid, local = boot
    assert LOCAL_ID.fullmatch(local) and local != GLOBAL_ID
    lines = [m for m in cloud.requests("api")
             if (m["method"], m["path"]) == ("POST", "/v2.1/servers")]
    assert len(lines) == 1
    line = lines[0]
    assert (line["level"], line["global"], line["local"], line["status"]) == (
        "INFO", GLOBAL_ID, local, "202")
    assert line["user"].startswith("admin admin")


def test_placement_and_the_agent_log_the_boot_under_its_global_id(
        cloud: Cloud, boot: tuple[str, str]) -> None:
    server_uuid, _local = boot
    placement = [m for m in cloud.requests("placement") if m["global"] == GLOBAL_ID]
    paths = {(m["method"], m["path"].split("?")[0]) for m in placement}
    # The scheduling query and the claim the conductor made for this boot.
    assert ("GET", "/allocation_candidates") in paths, paths
    assert any(server_uuid in path for _method, path in paths), paths
    # Each placement request has its own new local id.
    assert len({m["local"] for m in placement}) == len(placement)
    assert GLOBAL_ID not in {m["local"] for m in placement}
    agent = cloud.lines("agent")
    spawned = [line for line in agent if f"spawned {server_uuid}" in line]
    assert len(spawned) == 1 and f"[{GLOBAL_ID} req-" in spawned[0], spawned
    guests = [m for m in cloud.requests("agent") if (m["method"], m["path"]) == (
        "POST", "/guests")]
    assert [m["global"] for m in guests] == [GLOBAL_ID]


def test_every_request_line_has_a_request_id(cloud: Cloud, boot: tuple[str, str]) -> None:
    for service in ("placement", "api", "agent"):
        lines = cloud.requests(service)
        assert lines, f"{service} logged no request"
        for line in lines:
            assert LOCAL_ID.fullmatch(line["local"]), line.group(0)
            assert line["global"] == "None" or LOCAL_ID.fullmatch(line["global"])


def test_a_malformed_caller_id_is_not_taken(cloud: Cloud) -> None:
    answer = requests.get(cloud.api + "/flavors", timeout=10, headers={
        "X-Auth-Token": "admin", "X-OpenStack-Request-ID": "req-not-a-uuid"})
    assert answer.status_code == 200
    local = answer.headers["x-openstack-request-id"]
    line = next(m for m in cloud.requests("api") if m["local"] == local)
    assert line["global"] == "None"
    assert "req-not-a-uuid" not in cloud.logs["api"].read_text()


def test_debug_follows_the_option(cloud: Cloud, boot: tuple[str, str]) -> None:
    placement = cloud.lines("placement")
    # debug = true: DEBUG lines, the options' values among them (secrets masked).
    assert any(" DEBUG " in line and "log_file" in line for line in placement)
    api = cloud.logs["api"].read_text()
    assert " DEBUG " not in api and " INFO " in api
    assert TOKEN not in api


# -- log_config_append ---------------------------------------------------------------------

def test_log_config_append_is_honoured(tmp_path: Path) -> None:
    custom = tmp_path / "custom.log"
    ini = tmp_path / "logging.ini"
    ini.write_text(f"""\
[loggers]
keys = root

[handlers]
keys = file

[formatters]
keys = context

[logger_root]
level = INFO
handlers = file

[handler_file]
class = FileHandler
args = ({str(custom)!r}, "a")
formatter = context

[formatter_context]
class = oslo_log.formatters.ContextFormatter
""")
    placement = PlacementProcess(tmp_path / "placement", config={
        "DEFAULT": {"log_config_append": ini, "log_file": tmp_path / "ignored.log",
                    "logging_context_format_string":
                        "CUSTOM %(levelname)s %(name)s [%(global_request_id)s "
                        "%(request_id)s] %(message)s"}})
    with placement:
        answer = requests.get(placement.url + "/resource_providers", timeout=10, headers={
            "X-Auth-Token": "admin", "X-OpenStack-Request-ID": GLOBAL_ID})
        assert answer.status_code == 200
    local = answer.headers["x-openstack-request-id"]
    text = custom.read_text()
    assert (f"CUSTOM INFO moorage.placement.requests [{GLOBAL_ID} {local}] "
            in text), text
    assert not (tmp_path / "ignored.log").exists()


@pytest.mark.parametrize("content", [None, "this is not a logging configuration\n"])
def test_a_bad_log_config_append_fails_the_start_in_one_line(
        tmp_path: Path, content: str | None) -> None:
    ini = tmp_path / "logging.ini"
    if content is not None:
        ini.write_text(content)
    conf = write_config(tmp_path / "placement.conf", {
        "DEFAULT": {"log_config_append": ini},
        "api": {"auth_strategy": "noauth2"},
        "placement_database": {"connection": f"sqlite:///{tmp_path / 'p.sqlite'}"},
        "placement_server": {"port": 1}})
    done = subprocess.run(
        [sys.executable, "-m", "moorage", "placement", "serve", "--config-file", str(conf)],
        capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"log_config_append {ini}" in done.stderr


def test_a_log_file_that_cannot_be_opened_fails_the_start_in_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir" / "placement.log"
    conf = write_config(tmp_path / "placement.conf", {
        "DEFAULT": {"log_file": missing},
        "placement_database": {"connection": f"sqlite:///{tmp_path / 'p.sqlite'}"}})
    done = subprocess.run(
        [sys.executable, "-m", "moorage", "placement", "serve", "--config-file", str(conf)],
        capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert done.stderr == f"cannot open the log file {missing}: No such file or directory\n"


def test_a_start_that_fails_after_logging_began_says_why_on_stderr_too(
        tmp_path: Path) -> None:
    """The log goes to its file alone, yet the operator at the console learns why the
    service did not start; the file has it as well."""
    log = tmp_path / "placement.log"
    conf = write_config(tmp_path / "placement.conf", {
        "DEFAULT": {"log_file": log},
        "placement_database": {"connection": "sqlite:////nonexistent/dir/p.sqlite"}})
    done = subprocess.run(
        [sys.executable, "-m", "moorage", "placement", "serve", "--config-file", str(conf)],
        capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    reason = "cannot use the placement database sqlite:////nonexistent/dir/p.sqlite"
    assert done.stderr.startswith(reason) and done.stderr.count("\n") == 1, done.stderr
    assert f"ERROR moorage.cli.main [-] {reason}" in log.read_text()
