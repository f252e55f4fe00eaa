"""NoValidHost explained on a placement without Moorage's explanation: the scheduler
probes ``GET /resource_providers`` only when nothing is offered, and its record names
the constraint that left no host, with the same counts Moorage's placement gives.

The cloud is test_decisions.py's: each trait a qcow2 + vmxnet3 image needs exists
somewhere, but no host has both.

    q1, q2   qcow2 (and raw)   virtio
    v1       raw only          vmxnet3, virtio
    big      qcow2 (and raw)   virtio          (most memory)

plus a sharing storage pool (a root that is no host) on Moorage's placement. The same
request runs on Moorage's placement with its explanation, on Moorage's placement with
the explanation dropped (so the scheduler probes), and on upstream placement 16.0.0.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator, Sequence

import pytest

from moorage.model.inventory import Inventory
from moorage.placement.client import Candidates, PlacementClient
from moorage.placement.provider_names import provider_uuid
from moorage.scheduler import NoValidHost, Scheduler
from moorage.scheduler.decisions import Decisions
from tests.compat import upstream
from tests.conftest import PlacementClient as HttpPlacement
from tests.unit.scheduler.fakes import FakeCatalog, conf, spec

QCOW2, RAW = "COMPUTE_IMAGE_TYPE_QCOW2", "COMPUTE_IMAGE_TYPE_RAW"
VIRTIO, VMXNET3 = "COMPUTE_NET_VIF_MODEL_VIRTIO", "COMPUTE_NET_VIF_MODEL_VMXNET3"
HOSTS = {"q1": (QCOW2, RAW, VIRTIO), "q2": (QCOW2, RAW, VIRTIO),
         "v1": (RAW, VMXNET3, VIRTIO), "big": (QCOW2, RAW, VIRTIO)}


class Unexplained(PlacementClient):
    """A client that never asks for Moorage's extensions: a placement without them
    (no explanation; summaries with their traits)."""

    def allocation_candidates_for(self, params: Sequence[tuple[str, str]],
                                  explain: int | None = None,
                                  traits: bool = True) -> Candidates:
        return super().allocation_candidates_for(params, None, traits=True)


def build(placement: PlacementClient, catalog: FakeCatalog) -> None:
    for name, traits in HOSTS.items():
        rp = provider_uuid(name)
        provider = placement.create_provider(name, rp)
        memory = 65536 if name == "big" else 16384
        generation = placement.set_inventories(rp, provider.generation, {
            "VCPU": Inventory.of(8), "MEMORY_MB": Inventory.of(memory),
            "DISK_GB": Inventory.of(100)})
        placement.set_traits(rp, generation, {*traits, "COMPUTE_NODE"})
        catalog.add_host(name, nodes=[name])
    pool = str(uuid.uuid4())
    provider = placement.create_provider("ceph-pool", pool)
    generation = placement.set_inventories(pool, provider.generation,
                                           {"DISK_GB": Inventory.of(10000)})
    placement.set_traits(pool, generation, {"MISC_SHARES_VIA_AGGREGATE"})


def decisions_of(placement: PlacementClient, catalog: FakeCatalog) -> Decisions:
    scheduler = Scheduler(conf(scheduler__image_metadata_prefilter=True,
                               scheduler__query_placement_for_image_type_support=True),
                          placement, catalog, random.Random(0))
    request = spec(disk_format="qcow2", properties={"hw_vif_model": "vmxnet3"})
    with pytest.raises(NoValidHost) as caught:
        scheduler.select_destinations(request)
    return caught.value.decisions


def summary(decisions: Decisions) -> dict[str, object]:
    return {"hosts": decisions.hosts, "deciding": decisions.deciding,
            "exclusions": sorted((e.constraint, e.excluded, e.of, tuple(sorted(e.hosts)))
                                 for e in decisions.exclusions),
            "together": decisions.together, "relaxed": decisions.relaxed}


@pytest.fixture
def moorage_cloud(placement: HttpPlacement) -> tuple[str, FakeCatalog]:
    catalog = FakeCatalog()
    build(PlacementClient(placement.url, "admin"), catalog)
    return placement.url, catalog


def test_probing_counts_as_moorages_explanation(moorage_cloud: tuple[str, FakeCatalog]
                                                 ) -> None:
    url, catalog = moorage_cloud
    explained = decisions_of(PlacementClient(url, "admin"), catalog)
    probed = decisions_of(Unexplained(url, "admin"), catalog)
    assert explained.deciding == VMXNET3
    assert summary(probed) == summary(explained)
    vmxnet3 = next(e for e in probed.exclusions if e.key == VMXNET3)
    assert (vmxnet3.excluded, vmxnet3.of) == (3, 4)
    assert sorted(vmxnet3.hosts) == ["big", "q1", "q2"]
    assert probed.relaxed is not None and probed.relaxed.hosts == 3


@pytest.fixture(scope="module")
def upstream_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server = upstream.started(tmp_path_factory.mktemp("upstream"))
    yield server.url
    server.stop()


def test_on_upstream_placement_the_real_constraint_is_named(upstream_url: str) -> None:
    """Upstream placement 16.0.0 ignores Moorage-Explain: the record still names the
    trait no host has with qcow2, with its counts (it was "resources" with none)."""
    catalog = FakeCatalog()
    client = PlacementClient(upstream_url, "admin")
    build(client, catalog)
    decisions = decisions_of(client, catalog)
    assert decisions.deciding == VMXNET3
    counted = {e.key: (e.excluded, e.of) for e in decisions.exclusions}
    assert counted[VMXNET3] == (3, 4) and counted[QCOW2] == (1, 4)
    assert decisions.together is not None
    assert set(decisions.together.constraints) == {QCOW2, VMXNET3}
    assert decisions.relaxed is not None and decisions.relaxed.hosts == 3
    assert not decisions.notes  # every constraint of this request was probed
