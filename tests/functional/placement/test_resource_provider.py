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


def test_the_answer_to_a_create_is_what_a_read_shows(backend_placement: PlacementClient
                                                     ) -> None:
    """POST answers from what it wrote (not from the index): a root, a child and a
    grandchild must still read back exactly as they were answered, headers included."""
    placement = backend_placement
    uuids = [str(uuid.uuid4()) for _ in range(3)]
    answers = []
    for depth, rp in enumerate(uuids):
        body = {"name": f"level-{depth}", "uuid": rp}
        if depth:
            body["parent_provider_uuid"] = uuids[depth - 1]
        answers.append(placement.post("/resource_providers", json=body, expect=200))
    for depth, (rp, answer) in enumerate(zip(uuids, answers, strict=True)):
        created = answer.json()
        assert created["parent_provider_uuid"] == (uuids[depth - 1] if depth else None)
        assert created["root_provider_uuid"] == uuids[0]
        shown = placement.get(f"/resource_providers/{rp}", expect=200)
        assert shown.json() == created
        assert answer.headers["last-modified"] == shown.headers["last-modified"]
        assert answer.headers["location"].endswith(f"/resource_providers/{rp}")


def test_a_duplicate_create_names_what_is_taken(backend_placement: PlacementClient) -> None:
    rp = backend_placement.create_provider("taken")
    for body, named in (({"name": "taken", "uuid": rp}, f"uuid: {rp}, name: taken"),
                        ({"name": "taken"}, "name: taken"),
                        ({"name": "free", "uuid": rp}, f"uuid: {rp}")):
        error = backend_placement.post("/resource_providers", json=body,
                                       expect=409).json()["errors"][0]
        assert error["code"] == "placement.duplicate_name"
        assert f"Conflicting resource provider {named} already exists." in error["detail"]
