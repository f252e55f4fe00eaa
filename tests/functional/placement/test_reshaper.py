"""POST /reshaper: inventory and allocations move between providers at once."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import pytest

from tests.conftest import PlacementClient
from tests.functional.placement.test_allocation import (
    OWNERS,
    claim,
    error,
    held,
    make_provider,
    new_uuid,
    usage,
)

# Reshaping is for services (nova-compute), not administrators.
SERVICE = {"x-roles": "service"}
DISK = {"total": 2048, "step_size": 10, "min_unit": 10, "max_unit": 1200}
VCPU = {"total": 10, "max_unit": 8}


@dataclass
class Host:
    """A compute node holding VCPU and disk, with an empty child for its NUMA cell."""

    root: str
    cell: str
    disk_user: str  # 1000 GB on the root
    vcpu_user: str  # 8 VCPU on the root
    mixed_user: str  # 20 GB and 1 VCPU on the root


def make_host(client: PlacementClient) -> Host:
    root = make_provider(client, {"DISK_GB": DISK, "VCPU": VCPU})
    cell = client.create_provider(parent=root)
    host = Host(root, cell, new_uuid(), new_uuid(), new_uuid())
    claim(client, host.disk_user, {root: {"DISK_GB": 1000}})
    claim(client, host.vcpu_user, {root: {"VCPU": 8}})
    claim(client, host.mixed_user, {root: {"DISK_GB": 20, "VCPU": 1}})
    return host


def inventories(client: PlacementClient, rp: str) -> dict[str, Any]:
    return client.get(f"/resource_providers/{rp}/inventories", expect=200).json()  # type: ignore[no-any-return]


def snapshot(client: PlacementClient, host: Host) -> Any:
    """Everything a reshape of ``host`` could change."""
    return (
        [inventories(client, rp) for rp in (host.root, host.cell)],
        [usage(client, rp) for rp in (host.root, host.cell)],
        [held(client, c) for c in (host.disk_user, host.vcpu_user, host.mixed_user)],
    )


def consumer(allocations: dict[str, dict[str, int]], generation: int | None,
             **extra: Any) -> dict[str, Any]:
    return {
        "allocations": {rp: {"resources": amounts} for rp, amounts in allocations.items()},
        **OWNERS, "consumer_generation": generation, **extra,
    }


def move_vcpu_to_cell(host: Host, root_generation: int = 4, **extra: Any) -> dict[str, Any]:
    """The body moving VCPU inventory and allocations from the root to the cell."""
    return copy.deepcopy({
        "inventories": {
            host.root: {"resource_provider_generation": root_generation,
                        "inventories": {"DISK_GB": DISK}},
            host.cell: {"resource_provider_generation": 0, "inventories": {"VCPU": VCPU}},
        },
        "allocations": {
            host.disk_user: consumer({host.root: {"DISK_GB": 1000}}, 1, **extra),
            host.vcpu_user: consumer({host.cell: {"VCPU": 8}}, 1, **extra),
            host.mixed_user: consumer({host.root: {"DISK_GB": 20}, host.cell: {"VCPU": 1}}, 1,
                                      **extra),
        },
    })


def test_move_inventory_to_a_child_and_back(shared_placement: PlacementClient) -> None:
    client = shared_placement
    host = make_host(client)
    assert usage(client, host.root)[0] == 4

    client.post("/reshaper", version="1.30", json=move_vcpu_to_cell(host), headers=SERVICE,
                expect=204)
    # Interim inventory, allocations and final inventory each give a new generation.
    assert usage(client, host.root) == (7, {"DISK_GB": 1020})
    assert usage(client, host.cell) == (3, {"VCPU": 9})
    assert inventories(client, host.cell)["inventories"]["VCPU"]["max_unit"] == 8
    assert held(client, host.vcpu_user)["allocations"] == {
        host.cell: {"generation": 3, "resources": {"VCPU": 8}}}
    assert held(client, host.mixed_user)["consumer_generation"] == 2

    newcomer = new_uuid()
    client.post("/reshaper", version="1.30", headers=SERVICE, expect=204, json={
        "inventories": {
            host.root: {"resource_provider_generation": 7,
                        "inventories": {"DISK_GB": DISK, "VCPU": VCPU}},
            host.cell: {"resource_provider_generation": 3, "inventories": {}},
        },
        "allocations": {
            host.vcpu_user: consumer({}, 2),
            newcomer: consumer({host.root: {"VCPU": 8}}, None),
            host.mixed_user: consumer({host.root: {"DISK_GB": 20, "VCPU": 1}}, 2),
        },
    })
    assert usage(client, host.root) == (10, {"DISK_GB": 1020, "VCPU": 9})
    # No interim step for an empty inventory; the emptied consumer held VCPU here.
    assert usage(client, host.cell) == (5, {})
    assert inventories(client, host.cell)["inventories"] == {}
    assert held(client, host.vcpu_user) == {"allocations": {}}
    assert held(client, newcomer)["consumer_generation"] == 1


def test_reshape_on_each_backend(backend_placement: PlacementClient) -> None:
    client = backend_placement
    host = make_host(client)
    client.post("/reshaper", version="1.38", headers=SERVICE, expect=204,
                json=move_vcpu_to_cell(host, consumer_type="RESHAPED"))
    assert usage(client, host.cell) == (3, {"VCPU": 9})
    assert held(client, host.vcpu_user)["consumer_type"] == "RESHAPED"
    # Inventory alone may move too.
    client.post("/reshaper", version="1.38", headers=SERVICE, expect=204, json={
        "inventories": {host.cell: {"resource_provider_generation": 3,
                                    "inventories": {"VCPU": VCPU, "MEMORY_MB": {"total": 64}}}},
        "allocations": {},
    })
    assert usage(client, host.cell) == (5, {"VCPU": 9, "MEMORY_MB": 0})


def test_mappings_from_1_34(shared_placement: PlacementClient) -> None:
    client = shared_placement
    host = make_host(client)
    body = move_vcpu_to_cell(host)
    body["allocations"][host.vcpu_user]["mappings"] = {"": [host.cell]}
    client.post("/reshaper", version="1.34", json=body, headers=SERVICE, expect=204)
    body["allocations"][host.vcpu_user]["consumer_generation"] = 2
    response = client.post("/reshaper", version="1.33", json=body, headers=SERVICE, expect=400)
    assert "('mappings' was unexpected)" in error(response)["detail"]


def test_route(shared_placement: PlacementClient) -> None:
    client = shared_placement
    client.post("/reshaper", version="1.29", json={}, headers=SERVICE, expect=404)
    assert client.get("/reshaper", expect=405).headers["allow"] == "POST"
    client.post("/reshaper", data="x", headers={"content-type": "text/plain", **SERVICE},
                expect=415)
    client.post("/reshaper", json={}, headers=SERVICE, expect=400)


@pytest.mark.parametrize("roles", ["admin", "member,reader", ""])
def test_only_services_may_reshape(shared_placement: PlacementClient, roles: str) -> None:
    client = shared_placement
    host = make_host(client)
    before = snapshot(client, host)
    response = client.post("/reshaper", json=move_vcpu_to_cell(host), token="nova",
                           headers={"x-roles": roles}, expect=403)
    assert "placement:reshaper:reshape" in error(response)["detail"]
    assert snapshot(client, host) == before


def _without(body: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k != key}


def _set(body: dict[str, Any], path: list[str], value: Any) -> dict[str, Any]:
    target = body
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return body


BAD: list[tuple[str, str, Any, int, str, str]] = [
    # (case, microversion, change to the body for (host, body), status, error code, detail)
    ("no allocations", "1.30", lambda h, b: _without(b, "allocations"), 400,
     "placement.undefined_code", "'allocations' is a required property"),
    ("no inventories", "1.30", lambda h, b: {**b, "inventories": {}}, 400,
     "placement.undefined_code", "JSON does not validate"),
    ("field unknown to an inventory", "1.30",
     lambda h, b: _set(b, ["inventories", h.root, "inventories", "DISK_GB", "bad_field"], 1),
     400, "placement.undefined_code", "'bad_field' was unexpected"),
    ("field unknown to a claim", "1.30",
     lambda h, b: _set(b, ["allocations", h.disk_user, "bad_field"], 1),
     400, "placement.undefined_code", "'bad_field' was unexpected"),
    ("consumer type before 1.38", "1.37",
     lambda h, b: _set(b, ["allocations", h.disk_user, "consumer_type"], "RESHAPED"),
     400, "placement.undefined_code", "('consumer_type' was unexpected)"),
    ("no consumer type from 1.38", "1.38", lambda h, b: b, 400, "placement.undefined_code",
     "'consumer_type' is a required property"),
    ("unknown provider in inventories", "1.30",
     lambda h, b: _set(b, ["inventories", "5ad6ef2b-9b41-4b6a-9d7d-a5d1c5b3a0f1"],
                       {"resource_provider_generation": 0, "inventories": {}}),
     400, "placement.resource_provider.not_found",
     "Resource provider 5ad6ef2b-9b41-4b6a-9d7d-a5d1c5b3a0f1 in inventories not found: No "
     "resource provider with uuid 5ad6ef2b-9b41-4b6a-9d7d-a5d1c5b3a0f1 found"),
    ("stale provider generation", "1.30",
     lambda h, b: _set(b, ["inventories", h.root, "resource_provider_generation"], 3),
     409, "placement.concurrent_update",
     "resource provider generation conflict for provider {root}: actual: 4, given: 3"),
    ("stale consumer generation", "1.30",
     lambda h, b: _set(b, ["allocations", h.vcpu_user, "consumer_generation"], 99),
     409, "placement.concurrent_update", "consumer generation conflict - expected 1 but got 99"),
    ("unknown provider in allocations", "1.30",
     lambda h, b: _set(b, ["allocations", h.vcpu_user, "allocations"],
                       {"5ad6ef2b-9b41-4b6a-9d7d-a5d1c5b3a0f1": {"resources": {"VCPU": 1}}}),
     400, "placement.undefined_code",
     "Allocation for resource provider '5ad6ef2b-9b41-4b6a-9d7d-a5d1c5b3a0f1' that does not "
     "exist."),
    ("unknown class in inventories", "1.30",
     lambda h, b: _set(b, ["inventories", h.cell, "inventories", "DISK_OF_STEEL"], DISK),
     400, "placement.undefined_code",
     "malformed reshaper data: No such resource class DISK_OF_STEEL."),
    ("unknown class in allocations", "1.30",
     lambda h, b: _set(b, ["allocations", h.vcpu_user, "allocations", h.cell, "resources"],
                       {"CUSTOM_NOPE": 1}),
     400, "placement.undefined_code", "malformed reshaper data: No such resource class "
     "CUSTOM_NOPE."),
    ("allocation breaking the new max_unit", "1.30",
     lambda h, b: _set(b, ["inventories", h.root, "inventories", "DISK_GB", "max_unit"], 600),
     409, "placement.undefined_code",
     "Unable to allocate inventory: Unable to create allocation for 'DISK_GB' on resource "
     "provider '{root}'. The requested amount would violate inventory constraints."),
    ("allocation without inventory", "1.30",
     lambda h, b: _set(b, ["inventories", h.cell, "inventories"], {"DISK_GB": DISK}),
     409, "placement.undefined_code",
     "Unable to allocate inventory: Inventory for 'VCPU' on resource provider '{cell}' "
     "invalid."),
    ("inventory still in use", "1.30",
     lambda h, b: {"inventories": {h.root: {"resource_provider_generation": 4,
                                            "inventories": {"VCPU": VCPU}}},
                   "allocations": {}},
     409, "placement.inventory.inuse",
     "update conflict: Inventory for 'DISK_GB' on resource provider '{root}' in use."),
]


@pytest.mark.parametrize(("version", "change", "status", "code", "detail"),
                         [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_refused_reshapes_change_nothing(
    shared_placement: PlacementClient, version: str, change: Any, status: int, code: str,
    detail: str,
) -> None:
    client = shared_placement
    host = make_host(client)
    before = snapshot(client, host)
    body = change(host, move_vcpu_to_cell(host))
    response = client.post("/reshaper", version=version, json=body, headers=SERVICE,
                           expect=status)
    assert error(response)["code"] == code
    assert detail.format(root=host.root, cell=host.cell) in error(response)["detail"]
    assert snapshot(client, host) == before
