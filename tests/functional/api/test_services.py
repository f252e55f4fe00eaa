"""Compute services: agents' heartbeats on the internal route, the operator's
os-services and os-hypervisors, and the evacuated guests a returning host destroys."""

from __future__ import annotations

import logging
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from moorage.api.handlers.services import AGENT_NOTIFIED
from moorage.api.storage import services as services_store
from moorage.compute.client import AgentUnreachable
from moorage.lifecycle import machine, operations, store
from moorage.lifecycle.records import MigrationRecord
from moorage.lifecycle.states import MigrationKind, MigrationStatus, OperationKind
from moorage.lifecycle.store import Applied, Fence
from moorage.virt.driver import Guest
from tests.api_fixtures import (
    SERVICE_TOKEN,
    ComputeApi,
    start_compute_api,
    stop_compute_api,
)

BEAT = {"binary": "nova-compute", "driver": "fake", "nodes": ["h1"],
        "agent_url": "http://127.0.0.1:9", "supported_instances": [["x86_64", "qemu", "hvm"]],
        "hypervisor_version": 7002000, "version": "0.1"}


class RecordingAgents:
    """An AgentClient that records set_disabled calls; ``down`` hosts are unreachable."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, bool]] = []
        self.down: set[str] = set()

    def spawn(self, host: str, guest: Guest) -> None:
        raise AssertionError("not used")

    def destroy(self, host: str, instance_uuid: str) -> None:
        raise AssertionError("not used")

    def set_disabled(self, host: str, disabled: bool) -> None:
        if host in self.down:
            raise AgentUnreachable(f"{host} is down")
        self.calls.append((host, disabled))


def _beat(api: ComputeApi, host: str = "h1", service_token: str | None = SERVICE_TOKEN
          ) -> Any:
    """An agent's heartbeat, with ``service_token`` (None: none at all)."""
    headers = {"X-Service-Token": service_token} if service_token is not None else {}
    return api.request("PUT", f"/internal/services/{host}", json={**BEAT, "nodes": [host]},
                       token=None, headers=headers)


def test_heartbeat_registers_and_os_services_lists(compute_api: ComputeApi) -> None:
    response = _beat(compute_api)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["destroy"] == []
    assert body["service"]["host"] == "h1"
    assert body["service"]["disabled"] is False
    [service] = compute_api.admin("GET", "/v2.1/os-services", expect=200).json()["services"]
    assert (service["host"], service["state"], service["status"]) == ("h1", "up", "enabled")
    compute_api.user("GET", "/v2.1/os-services", expect=403)


def _service_url(api: ComputeApi, host: str = "h1") -> str:
    """The service of ``host`` as the newest microversion names it: by its uuid."""
    [service] = api.admin("GET", f"/v2.1/os-services?host={host}").json()["services"]
    return f"/v2.1/os-services/{service['id']}"


def test_disable_tells_the_agent_and_the_heartbeat(compute_api: ComputeApi) -> None:
    agents = RecordingAgents()
    compute_api.state.agents = agents
    _beat(compute_api)
    url = _service_url(compute_api)
    answer = compute_api.admin(
        "PUT", url, json={"status": "disabled", "disabled_reason": "maintenance"},
        expect=200)
    updated = answer.json()["service"]
    assert (updated["status"], updated["disabled_reason"]) == ("disabled", "maintenance")
    assert answer.headers[AGENT_NOTIFIED] == "true"
    assert agents.calls == [("h1", True)]
    beat = _beat(compute_api).json()["service"]
    assert (beat["disabled"], beat["disabled_reason"]) == (True, "maintenance")
    # Unreachable agent: stored all the same; the next heartbeat carries it.
    agents.down.add("h1")
    answer = compute_api.admin("PUT", url, json={"status": "enabled"}, expect=200)
    assert answer.headers[AGENT_NOTIFIED] == "false"
    assert _beat(compute_api).json()["service"]["disabled"] is False
    # A change that leaves the status alone tells the agent nothing.
    answer = compute_api.admin("PUT", url, json={"forced_down": False}, expect=200)
    assert AGENT_NOTIFIED not in answer.headers


def test_forced_down_and_bad_updates(compute_api: ComputeApi) -> None:
    _beat(compute_api)
    url = _service_url(compute_api)
    compute_api.admin("PUT", url, json={"forced_down": True}, expect=200)
    [service] = compute_api.admin("GET", "/v2.1/os-services").json()["services"]
    assert (service["state"], service["forced_down"]) == ("down", True)
    for body, words in [({"status": "off"}, "allowed: enabled, disabled"),
                        ({"forced_down": "maybe"}, "forced_down"),
                        ({"disabled_reason": "x"}, "only allowed with status 'disabled'"),
                        ({}, "at least one")]:
        message = compute_api.admin("PUT", url, json=body, expect=400).json()
        assert words in message["badRequest"]["message"], body
    compute_api.admin("PUT", f"/v2.1/os-services/{uuid.uuid4()}", json={"status": "enabled"},
                      expect=404)
    compute_api.user("PUT", url, json={"status": "disabled"}, expect=403)


def test_bad_heartbeats_are_400(compute_api: ComputeApi) -> None:
    for change in ({"nodes": "h1"}, {"supported_instances": [["x86_64"]]},
                   {"hypervisor_version": "seven"}, {"driver": None},
                   {"refused": ["COMPUTE_NET_VIF_MODEL_E1000"]},
                   {"refused": {"h2": ["COMPUTE_NET_VIF_MODEL_E1000"]}},
                   {"refused": {"h1": ["not a trait"]}}):
        response = compute_api.internal("PUT", "/internal/services/h1",
                                        json={**BEAT, **change})
        assert response.status_code == 400, (change, response.text)
    assert compute_api.admin("GET", "/v2.1/os-services").json()["services"] == []


def test_a_heartbeat_records_what_each_node_refuses(compute_api: ComputeApi) -> None:
    """The refused traits are the service's record, read by the plan and preflight; a
    changed report replaces them, an agent of an older release (no field) has none."""
    refused = {"h1": ["COMPUTE_NET_VIF_MODEL_E1000", "COMPUTE_IMAGE_TYPE_VHD"]}
    compute_api.internal("PUT", "/internal/services/h1", json={**BEAT, "refused": refused},
                         expect=200)
    state = compute_api.state
    with state.database.reader() as conn:
        record = services_store.load_service_by_host(conn, "h1")
    assert record.refused == {"h1": ["COMPUTE_IMAGE_TYPE_VHD", "COMPUTE_NET_VIF_MODEL_E1000"]}
    assert state.catalog.hosts()["h1"].refused == {"h1": frozenset(refused["h1"])}
    compute_api.internal("PUT", "/internal/services/h1", json=BEAT, expect=200)
    with state.database.reader() as conn:
        assert services_store.load_service_by_host(conn, "h1").refused == {}
    assert state.catalog.hosts()["h1"].refused == {}


def test_hypervisors(compute_api: ComputeApi) -> None:
    _beat(compute_api, "h1")
    _beat(compute_api, "h2")
    listed = compute_api.admin("GET", "/v2.1/os-hypervisors", expect=200).json()
    assert [h["hypervisor_hostname"] for h in listed["hypervisors"]] == ["h1", "h2"]
    # running_vms is a field of the detail before 2.88.
    detail = compute_api.admin("GET", "/v2.1/os-hypervisors/detail", expect=200,
                               headers={"OpenStack-API-Version": "compute 2.87"}).json()
    first = detail["hypervisors"][0]
    assert (first["state"], first["status"], first["running_vms"]) == ("up", "enabled", 0)
    assert first["hypervisor_type"] == "fake"
    second = listed["hypervisors"][1]["id"]
    shown = compute_api.admin("GET", f"/v2.1/os-hypervisors/{second}", expect=200).json()
    assert shown["hypervisor"]["service"]["host"] == "h2"
    compute_api.admin("GET", f"/v2.1/os-hypervisors/{uuid.uuid4()}", expect=404)


def test_a_returning_host_ends_the_evacuations_away_from_it(compute_api: ComputeApi,
                                                              placement: Any) -> None:
    """The heartbeat records an operation; a conductor releases the migration's hold on
    the source and has the guest left there destroyed (the agent unreachable here: at
    its next heartbeat). Recorded once, carried out once."""
    compute_api.attach_workers()
    _beat(compute_api, "h1")
    provider = placement.create_provider("h1")
    placement.put(f"/resource_providers/{provider}/inventories", json={
        "resource_provider_generation": 0,
        "inventories": {"VCPU": {"total": 8}}}, expect=200)
    server_uuid, migration_uuid = str(uuid.uuid4()), str(uuid.uuid4())
    placement.put(f"/allocations/{migration_uuid}", json={
        "allocations": {provider: {"resources": {"VCPU": 2}}},
        "project_id": "p", "user_id": "u", "consumer_generation": None,
        "consumer_type": "MIGRATION"}, expect=204)
    database = compute_api.state.database
    # An evacuation from h1 finished while h1 was down, by the table's own transitions.
    with database.writer() as writer:
        op = operations.add(writer.conn, server_uuid, OperationKind.EVACUATE,
                            owner="evacuating", lease_seconds=60)
        fence = Fence(op.id, "evacuating")
        assert store.insert_migration(writer.conn, MigrationRecord(
            uuid=migration_uuid, server_uuid=server_uuid, kind=MigrationKind.EVACUATION,
            source_host="h1"), fence=fence)
        assert store.apply_migration(writer.conn, machine.migration_transition(
            "migration.evacuated"), migration_uuid, fence=fence, dest_host="h2"
        ) is Applied.APPLIED
        assert operations.finish(writer.conn, op.id, "evacuating")
    assert _beat(compute_api, "h1").json()["destroy"] == []
    deadline = time.monotonic() + 30
    while True:
        with database.reader() as conn:
            migration = store.load_migration(conn, migration_uuid)
            pending = operations.pending(conn)
        assert migration is not None
        if migration.status == MigrationStatus.COMPLETED and not pending:
            break
        assert time.monotonic() < deadline, (migration, pending)
        time.sleep(0.05)
    allocations = placement.get(f"/allocations/{migration_uuid}", expect=200).json()
    assert allocations["allocations"] == {}
    # The agent did not answer the destroy: its next heartbeat carries it, once.
    assert _beat(compute_api, "h1").json()["destroy"] == [server_uuid]
    assert _beat(compute_api, "h1").json()["destroy"] == []
    with database.reader() as conn:
        assert operations.pending(conn) == []


def test_service_token_guards_the_internal_routes(compute_api: ComputeApi) -> None:
    missing = _beat(compute_api, service_token=None)
    assert missing.status_code == 401
    assert "X-Service-Token" in missing.json()["unauthorized"]["message"]
    assert _beat(compute_api, service_token="wrong").status_code == 401
    assert _beat(compute_api).status_code == 200


def _api_with(tmp_path: Path, placement: Any, name: str, **default: object) -> ComputeApi:
    return start_compute_api(tmp_path / name, placement.url,
                             config={"DEFAULT": {"service_token": "", **default}})


def test_without_a_token_internal_writes_need_the_development_flag(
        tmp_path: Path, placement: Any, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="moorage.api.app"):
        closed = _api_with(tmp_path, placement, "closed")
    [warning] = [r.getMessage() for r in caplog.records if "service_token" in r.getMessage()]
    assert warning.startswith("compute API: [DEFAULT] service_token is unset: the agents' "
                              "registrations and heartbeats (PUT /internal/services/...) "
                              "are refused (401)"), warning
    try:
        for host, body in (("h1", {**BEAT, "nodes": ["h1"]}),
                           ("evil", {**BEAT, "nodes": ["evil"], "agent_url": "http://x"})):
            refused = closed.request("PUT", f"/internal/services/{host}", json=body,
                                     token=None, expect=401).json()["unauthorized"]
            assert refused["message"].startswith("Anonymous PUT refused"), refused
            assert "[DEFAULT] service_token" in refused["message"], refused
        fleet_beat = closed.request("PUT", "/internal/services", json={"services": []},
                                    token=None, expect=401)
        assert "allow_anonymous_internal_writes" in fleet_beat.text
        # Nor does a user's token stand for the service token.
        closed.request("PUT", "/internal/services/h1", json=BEAT, token="admin", expect=401)
        assert closed.admin("GET", "/v2.1/os-services").json()["services"] == []
    finally:
        stop_compute_api(closed)
    development = _api_with(tmp_path, placement, "development",
                            allow_anonymous_internal_writes=True)
    try:
        assert _beat(development, service_token=None).status_code == 200
        [service] = development.admin("GET", "/v2.1/os-services").json()["services"]
        assert service["host"] == "h1"
    finally:
        stop_compute_api(development)
