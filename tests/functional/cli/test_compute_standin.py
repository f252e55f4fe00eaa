"""The compute API commands over real HTTP, against a STAND-IN of the compute API.

``StandIn`` is a small HTTP server written here, not Moorage's compute API: it
answers canned nova-shaped bodies and records every request, so these tests check
what the client sends (paths under /v2.1, X-Auth-Token, bodies in nova's shapes),
how the commands read the answers, and that failures are one line on stderr with
exit 1. The tests against the real API live in test_compute_api_cli.py.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest

from moorage.api.client import ComputeApiClient, ComputeApiError
from tests.cli_runner import Run, run_moorage

Answer = tuple[int, Any]
Route = Answer | Callable[["Seen"], Answer]


@dataclass(frozen=True)
class Seen:
    """One request the stand-in received."""

    method: str
    path: str
    query: list[tuple[str, str]]
    token: str | None
    body: Any


@dataclass
class StandIn:
    """A stand-in compute API: routes (method, path) to canned answers."""

    url: str
    routes: dict[tuple[str, str], Route] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)

    def route(self, method: str, path: str, answer: Route) -> None:
        self.routes[(method, "/v2.1" + path)] = answer

    def image_route(self, method: str, path: str, answer: Route) -> None:
        """A route of the image service (glance v2 at /image on the same listener)."""
        self.routes[(method, "/image/v2" + path)] = answer

    def requests(self, *methods: str) -> list[tuple[str, str, Any]]:
        """(method, path without /v2.1 or /image/v2, body) of the requests, GETs left
        out unless asked."""
        return [(s.method, s.path.removeprefix("/v2.1").removeprefix("/image/v2"), s.body)
                for s in self.seen
                if s.method in (methods or ("POST", "PUT", "PATCH", "DELETE"))]


def _handler(stand_in: StandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _answer(self) -> None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            seen = Seen(self.command, parts.path, parse_qsl(parts.query),
                        self.headers.get("x-auth-token"),
                        json.loads(raw) if raw else None)
            stand_in.seen.append(seen)
            route = stand_in.routes.get((self.command, parts.path))
            if route is None:
                status, body = 404, {"itemNotFound": {
                    "code": 404, "message": f"stand-in: no route {self.command} {parts.path}"}}
            elif callable(route):
                status, body = route(seen)
            else:
                status, body = route
            data = body if isinstance(body, bytes) else (
                b"" if body is None else json.dumps(body).encode())
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer

    return Handler


@pytest.fixture
def stand_in() -> Iterator[StandIn]:
    stand = StandIn("")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(stand))
    stand.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield stand
    server.shutdown()
    server.server_close()



@pytest.fixture
def moorage(capsys: pytest.CaptureFixture[str], stand_in: StandIn) -> Callable[..., Run]:
    """Run ``moorage ARGS --os-compute-url STAND-IN`` in-process."""

    def run(*argv: str) -> Run:
        return run_moorage(capsys, [*argv, "--os-compute-url", stand_in.url])

    return run


Moorage = Callable[..., Run]
SMALL = {"id": "f1", "name": "small", "ram": 512, "vcpus": 1, "disk": 1,
         "OS-FLV-EXT-DATA:ephemeral": 0, "swap": ""}
# As glance shows it: properties flat beside the attributes.
CIRROS = {"id": "i1", "name": "cirros", "disk_format": "qcow2", "container_format": "bare",
          "hw_vif_model": "e1000"}


def with_catalog(stand_in: StandIn) -> None:
    """A flavor "small" (id f1) and an image "cirros" (id i1), found by name or id."""
    stand_in.route("GET", "/flavors/detail", (200, {"flavors": [SMALL]}))
    stand_in.route("GET", "/flavors/f1", (200, {"flavor": SMALL}))
    stand_in.route("GET", "/flavors/f1/os-extra_specs", (200, {"extra_specs": {}}))
    stand_in.image_route("GET", "/images", (200, {"images": [CIRROS]}))
    stand_in.image_route("GET", "/images/i1", (200, CIRROS))


# -- the client ----------------------------------------------------------------------
def test_client_sends_the_token_under_v21(stand_in: StandIn) -> None:
    stand_in.route("GET", "/flavors/detail", (200, {"flavors": [SMALL]}))
    client = ComputeApiClient(stand_in.url + "/", "alice:p1")
    assert client.flavors() == [SMALL]
    # Every flavor the caller may see, private ones too (nova's is_public=none).
    assert stand_in.seen == [Seen("GET", "/v2.1/flavors/detail", [("is_public", "none")],
                                  "alice:p1", None)]


def test_client_reads_url_and_token_from_the_environment(
        stand_in: StandIn, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MOORAGE_COMPUTE_URL", stand_in.url)
    monkeypatch.setenv("MOORAGE_TOKEN", "bob")
    stand_in.route("GET", "/os-aggregates", (200, {"aggregates": []}))
    assert ComputeApiClient().aggregates() == []
    assert stand_in.seen[0].token == "bob"


def test_client_escapes_path_segments(stand_in: StandIn) -> None:
    client = ComputeApiClient(stand_in.url)
    with pytest.raises(ComputeApiError):
        client.delete_extra_spec("f1", "trait:CUSTOM_A/B")
    assert stand_in.seen[0].path == "/v2.1/flavors/f1/os-extra_specs/trait:CUSTOM_A%2FB"


def test_nova_errors_become_one_line(stand_in: StandIn) -> None:
    stand_in.route("POST", "/flavors", (409, {"conflictingRequest": {
        "code": 409, "message": "Flavor with name small already exists."}}))
    with pytest.raises(ComputeApiError) as caught:
        ComputeApiClient(stand_in.url).create_flavor("small", 512, 1, 1)
    assert str(caught.value) == ("POST /flavors: 409 Conflict: "
                                 "Flavor with name small already exists.")
    assert caught.value.status == 409


def test_an_answer_that_is_not_json(stand_in: StandIn) -> None:
    stand_in.route("GET", "/os-services", (200, b"<html>hello</html>"))
    with pytest.raises(ComputeApiError, match="answered 200 with a body that is not JSON; "
                       "is it a Moorage compute API"):
        ComputeApiClient(stand_in.url).services()


def test_an_answer_without_the_expected_key(stand_in: StandIn) -> None:
    stand_in.route("GET", "/os-services", (200, {"versions": []}))
    with pytest.raises(ComputeApiError, match="the answer has no 'services'"):
        ComputeApiClient(stand_in.url).services()


# -- flavors ----------------------------------------------------------------------
def test_flavor_create_with_extra_specs(moorage: Moorage, stand_in: StandIn) -> None:
    stand_in.route("POST", "/flavors", lambda seen: (200, {"flavor": {
        **SMALL, "extra_specs": seen.body["flavor"]["extra_specs"]}}))
    run = moorage("flavor", "create", "small", "--ram", "512", "--disk", "1",
                  "--property", "trait:HW_CPU_X86_AVX2=required", "-f", "json")
    assert run.code == 0, run.err
    assert json.loads(run.out)["properties"] == {"trait:HW_CPU_X86_AVX2": "required"}
    # One request: the API validates the specs with the flavor, all or nothing.
    assert stand_in.requests() == [
        ("POST", "/flavors", {"flavor": {
            "name": "small", "ram": 512, "vcpus": 1, "disk": 1,
            "extra_specs": {"trait:HW_CPU_X86_AVX2": "required"}}}),
    ]


def test_flavor_create_refused_is_one_line(moorage: Moorage, stand_in: StandIn) -> None:
    stand_in.route("POST", "/flavors", (400, {"badRequest": {
        "code": 400, "message": "Invalid extra spec trait:NOPE: not an os-traits name."}}))
    run = moorage("flavor", "create", "small", "--property", "trait:NOPE=required")
    assert (run.code, run.out) == (1, "")
    assert run.err == ("POST /flavors: 400 Bad Request: "
                       "Invalid extra spec trait:NOPE: not an os-traits name.\n")


def test_flavor_set_and_unset_by_name(moorage: Moorage, stand_in: StandIn) -> None:
    with_catalog(stand_in)
    stand_in.route("POST", "/flavors/f1/os-extra_specs", lambda seen: (200, seen.body))
    stand_in.route("DELETE", "/flavors/f1/os-extra_specs/hw:cpu_policy", (200, None))
    assert moorage("flavor", "set", "small", "--property", "hw:cpu_policy=dedicated").code == 0
    assert moorage("flavor", "unset", "small", "--property", "hw:cpu_policy").code == 0
    assert stand_in.requests() == [
        ("POST", "/flavors/f1/os-extra_specs", {"extra_specs": {"hw:cpu_policy": "dedicated"}}),
        ("DELETE", "/flavors/f1/os-extra_specs/hw:cpu_policy", None),
    ]


def test_flavor_list_long_reads_extra_specs(moorage: Moorage, stand_in: StandIn) -> None:
    with_catalog(stand_in)
    stand_in.route("GET", "/flavors/f1/os-extra_specs",
                   (200, {"extra_specs": {"resources:VCPU": "0"}}))
    run = moorage("flavor", "list", "--long", "-f", "json")
    assert run.code == 0, run.err
    assert json.loads(run.out) == [{"id": "f1", "name": "small", "ram": 512, "disk": 1,
                                    "ephemeral": 0, "vcpus": 1,
                                    "properties": {"resources:VCPU": "0"}}]


def test_unknown_flavor_is_one_line(moorage: Moorage, stand_in: StandIn) -> None:
    with_catalog(stand_in)
    run = moorage("flavor", "show", "huge")
    assert (run.code, run.out, run.err) == (
        1, "", "No flavor with a name or ID of 'huge' exists.\n")


# -- images ----------------------------------------------------------------------
def test_image_create_set_unset(moorage: Moorage, stand_in: StandIn) -> None:
    with_catalog(stand_in)
    stand_in.image_route("POST", "/images", lambda seen: (201, {"id": "i2", **seen.body}))
    stand_in.image_route("PATCH", "/images/i1", (200, CIRROS))
    run = moorage("image", "create", "esxi", "--disk-format", "vmdk",
                  "--container-format", "bare", "--property", "hw_disk_bus=scsi",
                  "--visibility", "private", "-f", "json")
    assert run.code == 0, run.err
    assert json.loads(run.out)["properties"] == {"hw_disk_bus": "scsi"}
    assert moorage("image", "set", "cirros", "--property", "hw_video_model=virtio",
                   "--min-ram", "128").code == 0
    assert moorage("image", "unset", "cirros", "--property", "hw_vif_model").code == 0
    run = moorage("image", "unset", "cirros", "--property", "hw_nope")
    assert (run.code, run.err) == (1, "image i1 has no property hw_nope\n")
    assert stand_in.requests() == [
        ("POST", "/images", {"name": "esxi", "disk_format": "vmdk",
                             "container_format": "bare", "visibility": "private",
                             "hw_disk_bus": "scsi"}),
        ("PATCH", "/images/i1", [{"op": "replace", "path": "/min_ram", "value": 128},
                                 {"op": "add", "path": "/hw_video_model", "value": "virtio"}]),
        ("PATCH", "/images/i1", [{"op": "remove", "path": "/hw_vif_model"}]),
    ]


# -- servers ----------------------------------------------------------------------
def building_then(final: dict[str, Any], polls_before: int = 1) -> Callable[[Seen], Answer]:
    """GET /servers/s1: BUILD for ``polls_before`` polls, then ``final``."""
    count = [0]

    def answer(seen: Seen) -> Answer:
        count[0] += 1
        if count[0] <= polls_before:
            return 200, {"server": {"id": "s1", "name": "web", "status": "BUILD",
                                    "OS-EXT-STS:task_state": "scheduling"}}
        return 200, {"server": {"id": "s1", "name": "web", "OS-EXT-STS:task_state": None,
                                **final}}

    return answer


def test_server_create_by_names_boot_from_volume_and_wait(
        moorage: Moorage, stand_in: StandIn) -> None:
    with_catalog(stand_in)
    stand_in.route("POST", "/servers", (202, {"server": {"id": "s1"}}))
    stand_in.route("GET", "/servers/s1", building_then(
        {"status": "ACTIVE", "OS-EXT-SRV-ATTR:host": "kvm-2", "image": "",
         "moorage:scheduling": {"candidates": 2, "attempts": [
             {"host": "kvm-1", "result": "failed", "kind": "UnsupportedHardware",
              "message": "no e1000"}, {"host": "kvm-2", "result": "ok"}]}}, polls_before=2))
    run = moorage("server", "create", "web", "--flavor", "small", "--image", "cirros",
                  "--boot-from-volume", "10", "--availability-zone", "az1", "--wait",
                  "--wait-interval", "0.01", "-f", "json")
    assert run.code == 0, run.err
    assert json.loads(run.out)["host"] == "kvm-2"
    assert run.err.splitlines() == [
        "server web: BUILD (scheduling)",
        "server web: ACTIVE on kvm-2",
        "  attempt 1. kvm-1: failed, UnsupportedHardware: no e1000",
        "  attempt 2. kvm-2: ok",
    ]
    assert stand_in.requests() == [("POST", "/servers", {"server": {
        "name": "web", "flavorRef": "f1", "networks": "none", "imageRef": "",
        "availability_zone": "az1",
        "block_device_mapping_v2": [{
            "boot_index": 0, "source_type": "image", "destination_type": "volume",
            "uuid": "i1", "volume_size": 10, "delete_on_termination": True}]}})]
    # "small" and "cirros" are names: looked up as ids first, then found in the lists.
    gets = [path for _, path, _ in stand_in.requests("GET")]
    assert gets[:4] == ["/flavors/small", "/flavors/detail", "/images/cirros", "/images"]


def test_server_create_wait_ending_in_error_shows_why_and_exits_1(
        moorage: Moorage, stand_in: StandIn) -> None:
    with_catalog(stand_in)
    stand_in.route("POST", "/servers", (202, {"server": {"id": "s1"}}))
    stand_in.route("GET", "/servers/s1", building_then({"status": "ERROR", "fault": {
        "code": 500, "message": "No valid host was found. There are not enough hosts "
        "available.", "details": {"required": ["COMPUTE_NET_VIF_MODEL_E1000"]}}}))
    run = moorage("server", "create", "web", "--flavor", "f1", "--image", "i1", "--host",
                  "kvm-1", "--wait", "--wait-interval", "0.01")
    assert run.code == 1
    assert "| fault             | 500: No valid host was found." in run.out
    assert run.err.splitlines()[-1] == (
        "create of server s1 failed: ERROR: No valid host was found. There are not enough "
        "hosts available.")
    assert stand_in.requests()[0][2]["server"]["host"] == "kvm-1"
    assert stand_in.requests()[0][2]["server"]["imageRef"] == "i1"


@pytest.mark.parametrize(("argv", "body"), [
    (["rebuild", "s1", "--image", "cirros"], {"rebuild": {"imageRef": "i1"}}),
    (["resize", "s1", "--flavor", "small"], {"resize": {"flavorRef": "f1"}}),
    (["resize", "confirm", "s1"], {"confirmResize": None}),
    (["resize", "revert", "s1"], {"revertResize": None}),
    (["migrate", "s1"], {"migrate": None}),
    (["migrate", "s1", "--host", "kvm-3"], {"migrate": {"host": "kvm-3"}}),
    (["evacuate", "s1"], {"evacuate": {}}),
    (["evacuate", "s1", "--host", "kvm-3"], {"evacuate": {"host": "kvm-3"}}),
])
def test_server_actions(moorage: Moorage, stand_in: StandIn, argv: list[str],
                        body: dict[str, Any]) -> None:
    with_catalog(stand_in)
    stand_in.route("GET", "/servers/s1", (200, {"server": {"id": "s1", "name": "web",
                                                           "status": "ACTIVE"}}))
    stand_in.route("POST", "/servers/s1/action", (202, None))
    run = moorage("server", *argv)
    assert (run.code, run.out, run.err) == (0, "", "")
    assert stand_in.requests() == [("POST", "/servers/s1/action", body)]


def test_server_resize_wait(moorage: Moorage, stand_in: StandIn) -> None:
    with_catalog(stand_in)
    states = iter([("ACTIVE", None), ("RESIZE", "resize_migrating"), ("VERIFY_RESIZE", None)])

    def answer(seen: Seen) -> Answer:
        status, task = next(states)
        return 200, {"server": {"id": "s1", "name": "web", "status": status,
                                "OS-EXT-STS:task_state": task}}

    stand_in.route("GET", "/servers/s1", answer)
    stand_in.route("POST", "/servers/s1/action", (202, None))
    run = moorage("server", "resize", "s1", "--flavor", "f1", "--wait",
                  "--wait-interval", "0.01")
    assert run.code == 0, run.err
    assert run.err.splitlines() == ["server web: RESIZE (resize_migrating)",
                                    "server web: VERIFY_RESIZE",
                                    "resize done: server web: VERIFY_RESIZE"]


def test_server_delete_wait_by_name(moorage: Moorage, stand_in: StandIn) -> None:
    stand_in.route("GET", "/servers/detail", lambda seen: (200, {"servers": [
        {"id": "s1", "name": "web"}] if ("name", "^web$") in seen.query else []}))
    gets = [0]

    def show(seen: Seen) -> Answer:
        gets[0] += 1
        if gets[0] == 1:
            return 200, {"server": {"id": "s1", "name": "web", "status": "ACTIVE",
                                    "OS-EXT-STS:task_state": "deleting"}}
        return 404, {"itemNotFound": {"code": 404, "message": "Instance s1 not found."}}

    stand_in.route("GET", "/servers/s1", show)
    stand_in.route("DELETE", "/servers/s1", (204, None))
    run = moorage("server", "delete", "web", "--wait", "--wait-interval", "0.01")
    assert run.code == 0, run.err
    assert run.err.splitlines() == ["server web: ACTIVE (deleting)", "server s1: deleted"]
    assert stand_in.requests() == [("DELETE", "/servers/s1", None)]


def test_server_list_filters(moorage: Moorage, stand_in: StandIn) -> None:
    stand_in.route("GET", "/servers/detail", (200, {"servers": [
        {"id": "s2", "name": "b", "status": "ERROR", "OS-EXT-SRV-ATTR:host": None,
         "flavor": {"original_name": "small"}, "image": {"id": "i1"}},
        {"id": "s1", "name": "a", "status": "ERROR", "OS-EXT-SRV-ATTR:host": "kvm-1",
         "flavor": {"id": "f1"}, "image": ""}]}))
    run = moorage("server", "list", "--status", "ERROR", "--all-projects", "-f", "value")
    assert run.code == 0, run.err
    # The API's order (newest first), not sorted again.
    assert run.out.splitlines() == ["s2 b ERROR None small i1",
                                    "s1 a ERROR kvm-1 f1 N/A (booted from volume)"]
    assert stand_in.seen[0].query == [("status", "ERROR"), ("all_tenants", "1")]


def test_migration_list(moorage: Moorage, stand_in: StandIn) -> None:
    stand_in.route("GET", "/os-migrations", (200, {"migrations": [
        {"id": 1, "uuid": "m1", "instance_uuid": "s1", "migration_type": "evacuation",
         "source_compute": "kvm-1", "dest_compute": "kvm-2", "status": "done"}]}))
    run = moorage("server", "migration", "list", "--type", "evacuation", "-f", "json")
    assert run.code == 0, run.err
    assert json.loads(run.out)[0]["type"] == "evacuation"
    assert stand_in.seen[0].query == [("migration_type", "evacuation")]


# -- hosts and aggregates ----------------------------------------------------------------------
SERVICES = {"services": [
    {"id": 7, "binary": "nova-compute", "host": "kvm-1", "status": "enabled",
     "state": "up", "forced_down": False, "zone": "nova"}]}


def test_host_list_and_set(moorage: Moorage, stand_in: StandIn) -> None:
    stand_in.route("GET", "/os-services", (200, SERVICES))
    stand_in.route("GET", "/os-hypervisors/detail", (200, {"hypervisors": [
        {"id": 1, "hypervisor_hostname": "kvm-1", "hypervisor_type": "QEMU",
         "running_vms": 2, "service": {"host": "kvm-1", "id": 7}}]}))
    stand_in.route("PUT", "/os-services/7", lambda seen: (200, {"service": {
        **SERVICES["services"][0], **seen.body}}))
    run = moorage("host", "list", "-f", "json")
    assert run.code == 0, run.err
    assert json.loads(run.out) == [{"host": "kvm-1", "driver": "QEMU", "status": "enabled",
                                    "state": "up", "servers": 2}]
    assert moorage("host", "set", "kvm-1", "--disable", "--reason", "maintenance").code == 0
    assert moorage("host", "set", "kvm-1", "--enable", "--force-down").code == 0
    run = moorage("host", "set", "kvm-9", "--disable")
    assert (run.code, run.err) == (1, "No compute host 'kvm-9' (known hosts: kvm-1).\n")
    assert stand_in.requests() == [
        ("PUT", "/os-services/7", {"status": "disabled", "disabled_reason": "maintenance"}),
        ("PUT", "/os-services/7", {"status": "enabled", "forced_down": True}),
    ]


def test_aggregates(moorage: Moorage, stand_in: StandIn) -> None:
    aggregate = {"id": 3, "name": "fast", "availability_zone": "az1", "hosts": ["kvm-1"],
                 "metadata": {"availability_zone": "az1"}}
    stand_in.route("POST", "/os-aggregates", (200, {"aggregate": aggregate}))
    stand_in.route("GET", "/os-aggregates", (200, {"aggregates": [aggregate]}))
    stand_in.route("GET", "/os-aggregates/3", (200, {"aggregate": aggregate}))
    stand_in.route("GET", "/os-aggregates/fast", (400, {"badRequest": {
        "code": 400, "message": "Invalid aggregate id fast."}}))
    stand_in.route("POST", "/os-aggregates/3/action", (200, {"aggregate": aggregate}))
    stand_in.route("PUT", "/os-aggregates/3", (200, {"aggregate": aggregate}))
    run = moorage("aggregate", "create", "fast", "--zone", "az1", "--property", "ssd=true")
    assert run.code == 0, run.err
    assert "| hosts             | kvm-1" in run.out
    assert moorage("aggregate", "add", "host", "fast", "kvm-2").code == 0
    assert moorage("aggregate", "remove", "host", "3", "kvm-1").code == 0
    assert moorage("aggregate", "set", "fast", "--zone", "az2", "--property", "a=b").code == 0
    assert moorage("aggregate", "unset", "fast", "--property", "ssd").code == 0
    assert stand_in.requests() == [
        ("POST", "/os-aggregates", {"aggregate": {"name": "fast", "availability_zone": "az1"}}),
        ("POST", "/os-aggregates/3/action", {"set_metadata": {"metadata": {"ssd": "true"}}}),
        ("POST", "/os-aggregates/3/action", {"add_host": {"host": "kvm-2"}}),
        ("POST", "/os-aggregates/3/action", {"remove_host": {"host": "kvm-1"}}),
        ("PUT", "/os-aggregates/3", {"aggregate": {"availability_zone": "az2"}}),
        ("POST", "/os-aggregates/3/action", {"set_metadata": {"metadata": {"a": "b"}}}),
        ("POST", "/os-aggregates/3/action", {"set_metadata": {"metadata": {"ssd": None}}}),
    ]
