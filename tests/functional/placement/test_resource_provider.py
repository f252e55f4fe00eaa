"""/resource_providers over real HTTP."""

from __future__ import annotations

import uuid

from tests.conftest import PlacementClient


def test_create_show_list_delete(placement: PlacementClient) -> None:
    rp = str(uuid.uuid4())
    created = placement.post("/resource_providers", json={"name": "cn1", "uuid": rp},
                             expect=200).json()
    assert created["uuid"] == rp
    assert created["generation"] == 0
    assert created["root_provider_uuid"] == rp
    shown = placement.get(f"/resource_providers/{rp}", expect=200).json()
    assert shown == created
    listed = placement.get("/resource_providers", expect=200).json()["resource_providers"]
    assert [p["uuid"] for p in listed] == [rp]
    placement.delete(f"/resource_providers/{rp}", expect=204)
    placement.get(f"/resource_providers/{rp}", expect=404)


def test_create_on_both_backends(backend_placement: PlacementClient) -> None:
    rp = backend_placement.create_provider("cn-both")
    assert backend_placement.get(f"/resource_providers/{rp}", expect=200).json()["name"] == (
        "cn-both")
