"""The Moorage-Explain extension of GET /allocation_candidates, over HTTP.

Five compute hosts and a sharing pool; the traits are spread so that each of two
traits exists somewhere but no host has both:

    h1  VCPU 4   QCOW2
    h2  VCPU 4   QCOW2
    h3  VCPU 4   VMXNET3
    h4  VCPU 1   QCOW2, VMXNET3        (too small for VCPU:2)
    h5  VCPU 4   QCOW2, DISABLED
    pool DISK_GB 100  MISC_SHARES_VIA_AGGREGATE (not a host)
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from moorage.placement.launcher import PlacementProcess
from tests.conftest import PlacementClient

QCOW2 = "COMPUTE_IMAGE_TYPE_QCOW2"
VMXNET3 = "COMPUTE_NET_VIF_MODEL_VMXNET3"
DISABLED = "COMPUTE_STATUS_DISABLED"


@dataclass(frozen=True)
class Cloud:
    client: PlacementClient
    hosts: dict[str, str]  # name -> uuid
    pool: str


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cloud]:
    server = PlacementProcess(tmp_path_factory.mktemp("explain")).start()
    client = PlacementClient(server.url)
    spread = {"h1": (4, [QCOW2]), "h2": (4, [QCOW2]), "h3": (4, [VMXNET3]),
              "h4": (1, [QCOW2, VMXNET3]), "h5": (4, [QCOW2, DISABLED])}
    hosts = {}
    for name, (vcpu, traits) in spread.items():
        rp = client.create_provider(name)
        client.put(f"/resource_providers/{rp}/inventories", json={
            "resource_provider_generation": client.generation(rp),
            "inventories": {"VCPU": {"total": vcpu}}}, expect=200)
        client.put(f"/resource_providers/{rp}/traits", json={
            "resource_provider_generation": client.generation(rp), "traits": traits},
            expect=200)
        hosts[name] = rp
    pool = client.create_provider("pool")
    client.put(f"/resource_providers/{pool}/inventories", json={
        "resource_provider_generation": client.generation(pool),
        "inventories": {"DISK_GB": {"total": 100}}}, expect=200)
    client.put(f"/resource_providers/{pool}/traits", json={
        "resource_provider_generation": client.generation(pool),
        "traits": ["MISC_SHARES_VIA_AGGREGATE"]}, expect=200)
    yield Cloud(client, hosts, pool)
    server.stop()


def ask(cloud: Cloud, query: str, listing: str | None = "10", expect: int = 200) -> Any:
    headers = {} if listing is None else {"Moorage-Explain": listing}
    return cloud.client.get(f"/allocation_candidates?{query}", version="1.39",
                            headers=headers, expect=expect).json()


def by_names(body: dict[str, Any]) -> dict[tuple[str, ...], dict[str, Any]]:
    return {(c["kind"], *c["names"]): c for c in body["moorage_explanation"]["constraints"]}


def test_no_header_no_extension(cloud: Cloud) -> None:
    """An upstream client's answer is unchanged."""
    body = ask(cloud, "resources=VCPU:1", listing=None)
    assert set(body) == {"allocation_requests", "provider_summaries"}


def test_each_trait_somewhere_no_host_has_all(cloud: Cloud) -> None:
    body = ask(cloud, f"resources=VCPU:2&required={QCOW2},{VMXNET3},!{DISABLED}")
    assert body["allocation_requests"] == []
    explained = body["moorage_explanation"]
    assert explained["hosts"] == 5  # the pool is not a host
    assert explained["viable"] == 0
    found = by_names(body)
    name = {uuid: n for n, uuid in cloud.hosts.items()}
    qcow2 = found[("required", QCOW2)]
    assert (qcow2["satisfied"], qcow2["excluded"]) == (4, 1)
    assert [name[u] for u in qcow2["excluded_roots"]] == ["h3"]
    vmxnet3 = found[("required", VMXNET3)]
    assert (vmxnet3["satisfied"], vmxnet3["excluded"]) == (2, 3)
    assert sorted(name[u] for u in vmxnet3["excluded_roots"]) == ["h1", "h2", "h5"]
    vcpu = found[("resources", "VCPU")]
    assert (vcpu["amount"], vcpu["excluded"]) == (2, 1)
    assert [name[u] for u in vcpu["excluded_roots"]] == ["h4"]
    disabled = found[("forbidden", DISABLED)]
    assert [name[u] for u in disabled["excluded_roots"]] == ["h5"]
    # No host has QCOW2 and VMXNET3 and room for 2 VCPU: h4 has both traits but 1 VCPU.
    constraints = explained["constraints"]
    together = {(constraints[i]["kind"], *constraints[i]["names"])
                for i in explained["together"]}
    assert ("required", VMXNET3) in together and len(together) >= 2
    # Dropping the VMXNET3 requirement leaves h1 and h2: the smallest change.
    relaxed = explained["relaxed"]
    assert constraints[relaxed["constraint"]]["names"] == [VMXNET3]
    assert relaxed["viable"] == 2


def test_counts_kept_when_candidates_exist(cloud: Cloud) -> None:
    body = ask(cloud, f"resources=VCPU:1&required={QCOW2}")
    assert len(body["allocation_requests"]) == 4
    explained = body["moorage_explanation"]
    assert explained["viable"] == 4
    assert explained["together"] == [] and explained["relaxed"] is None
    assert by_names(body)[("required", QCOW2)]["excluded"] == 1


def test_listing_is_capped_and_counted(cloud: Cloud) -> None:
    body = ask(cloud, f"resources=VCPU:1&required={VMXNET3}", listing="1")
    vmxnet3 = by_names(body)[("required", VMXNET3)]
    assert vmxnet3["excluded"] == 3 and len(vmxnet3["excluded_roots"]) == 1
    body = ask(cloud, f"resources=VCPU:1&required={VMXNET3}", listing="0")
    assert by_names(body)[("required", VMXNET3)]["excluded_roots"] == []


def test_any_of_and_member_of(cloud: Cloud) -> None:
    body = ask(cloud, f"resources=VCPU:1&required=in:{VMXNET3},{DISABLED}"
               "&member_of=00000000-0000-0000-0000-00000000000a")
    found = by_names(body)
    assert found[("required", VMXNET3, DISABLED)]["satisfied"] == 3
    member = found[("member_of", "00000000-0000-0000-0000-00000000000a")]
    assert (member["satisfied"], member["excluded"]) == (0, 5)


@pytest.mark.parametrize("bad", ["yes", "-1", "100000", "1.5", ""])
def test_bad_header_is_a_400(cloud: Cloud, bad: str) -> None:
    body = ask(cloud, "resources=VCPU:1", listing=bad, expect=400)
    assert "Moorage-Explain" in body["errors"][0]["detail"]


# -- Moorage-Summaries: resources -------------------------------------------------------
def test_summaries_without_traits_on_request(cloud: Cloud) -> None:
    """The scheduler's summaries carry resources and the tree, not the traits it never
    reads; without the header they are upstream's, traits included, and the cache of
    rendered summaries keeps the two apart."""
    query = "/allocation_candidates?resources=VCPU:1&required=COMPUTE_IMAGE_TYPE_QCOW2"
    for _ in range(2):  # the second answer of each kind comes from the rendered cache
        full = cloud.client.get(query, version="1.39", expect=200).json()
        bare = cloud.client.get(query, version="1.39", expect=200,
                                headers={"Moorage-Summaries": "resources"}).json()
        h1 = cloud.hosts["h1"]
        assert full["provider_summaries"][h1]["traits"] == [QCOW2]
        assert bare["provider_summaries"][h1] == {
            "resources": {"VCPU": {"capacity": 4, "used": 0}},
            "parent_provider_uuid": None, "root_provider_uuid": h1}
        assert bare["allocation_requests"] == full["allocation_requests"]
        assert set(bare["provider_summaries"]) == set(full["provider_summaries"])


@pytest.mark.parametrize("bad", ["traits", "", "resources,traits"])
def test_bad_summaries_header_is_a_400(cloud: Cloud, bad: str) -> None:
    body = cloud.client.get("/allocation_candidates?resources=VCPU:1", version="1.39",
                            headers={"Moorage-Summaries": bad}, expect=400).json()
    assert "Moorage-Summaries" in body["errors"][0]["detail"]
    assert "'resources'" in body["errors"][0]["detail"]
