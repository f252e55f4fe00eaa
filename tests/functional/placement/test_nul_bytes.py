"""NUL characters, which PostgreSQL refuses to store, are a 400 on every backend: in a
provider's name, a consumer's project or user, a query parameter. Before, PostgreSQL's
refusal surfaced as a 500 (psycopg.DataError); nothing is written."""

from __future__ import annotations

import uuid

from tests.conftest import PlacementClient


def test_nul_is_refused_and_nothing_is_written(backend_placement: PlacementClient) -> None:
    client = backend_placement
    named = client.post("/resource_providers", json={"name": "bad\x00name"}, expect=400)
    assert "NUL characters are not allowed" in named.json()["errors"][0]["detail"]
    assert client.get("/resource_providers").json()["resource_providers"] == []

    rp = client.create_provider("cn1")
    client.put(f"/resource_providers/{rp}/inventories", json={
        "resource_provider_generation": client.generation(rp),
        "inventories": {"VCPU": {"total": 4}}}, expect=200)
    consumer = str(uuid.uuid4())
    for field in ("project_id", "user_id"):
        body = {"allocations": {rp: {"resources": {"VCPU": 1}}},
                "project_id": "p", "user_id": "u", "consumer_generation": None}
        body[field] = "x\x00y"
        client.put(f"/allocations/{consumer}", json=body, expect=400)
    assert client.get(f"/allocations/{consumer}").json()["allocations"] == {}
    for query in ("project_id=a%00b", "project_id=a&user_id=%00"):
        client.get(f"/usages?{query}", expect=400)
    client.get("/resource_providers?name=%00", expect=400)
    # In the path too: on PostgreSQL, a DELETE looked it up and failed with a 500.
    for path in (f"/resource_providers/{rp}%00/inventories/VCPU", "/resource_providers/%00",
                 "/traits/CUSTOM_%00", "/resource_classes/CUSTOM_A%00"):
        for method in ("GET", "DELETE"):
            refused = client.request(method, path, expect=400)
            assert "NUL characters are not allowed in the path" in refused.text
    assert client.get(f"/resource_providers/{rp}/inventories").json()["inventories"]
    # An escaped backslash before "u0000" is text, not a NUL: accepted.
    client.post("/resource_providers", data=b'{"name": "back\\\\u0000slash"}',
                headers={"content-type": "application/json"}, expect=200)
