"""The capability catalogue's pure parts: families and labels, the property table
against the request filters, the census from an allocation-candidates answer, the
floor, the cache, the page's escaping and the Accept negotiation."""

from __future__ import annotations

import os_traits
import pytest
from hypothesis import given
from hypothesis import strategies as st

from moorage.api.capabilities import catalogue, families, page, properties
from moorage.api.capabilities.census import (
    CensusCache,
    HostOffer,
    TraitOffer,
    census,
    host_offers,
)
from moorage.api.handlers.capabilities import prefers_html
from moorage.model import vocabulary
from moorage.model.image import parse_properties
from moorage.placement.client import Candidates, ProviderSummary
from moorage.scheduler.request_filters import image_metadata_traits

NODE_A, NODE_B, NODE_C = "aaaaaaaa-0000-0000-0000-000000000001", \
    "bbbbbbbb-0000-0000-0000-000000000002", "cccccccc-0000-0000-0000-000000000003"
CHILD = "dddddddd-0000-0000-0000-000000000004"


@pytest.mark.parametrize(("trait", "label"), [
    ("COMPUTE_NET_VIF_MODEL_E1000", "e1000"),
    ("COMPUTE_NET_VIF_MODEL_SPAPR_VLAN", "spapr-vlan"),  # the property's spelling
    ("COMPUTE_IMAGE_TYPE_QCOW2", "qcow2"),
    ("HW_ARCH_X86_64", "x86_64"),
    ("HW_ARCH_ARMV7", "armv7"),  # os-traits names it, hw_architecture does not
    ("COMPUTE_ARCH_AARCH64", "aarch64"),
    ("COMPUTE_SECURITY_TPM_2_0", "TPM 2.0"),
    ("COMPUTE_SECURITY_UEFI_SECURE_BOOT", "UEFI SECURE BOOT"),
    ("COMPUTE_FIRMWARE_UEFI", "UEFI"),
    ("HW_CPU_X86_AVX2", "X86 AVX2"),
    ("COMPUTE_SOUND_MODEL_ICH9", "ich9"),
])
def test_labels_come_from_the_trait_names(trait: str, label: str) -> None:
    assert families.label(trait) == label


def test_families_are_os_traits_prefixes() -> None:
    members = [family.members for family in families.FAMILIES]
    assert all(m and m <= vocabulary.KNOWN for m in members)
    assert sum(len(m) for m in members) == len(frozenset().union(*members)), "overlap"
    assert families.family_of("COMPUTE_NET_VIF_MODEL_E1000").key == "nic_models"  # type: ignore[union-attr]
    assert families.family_of(os_traits.COMPUTE_SECURITY_UEFI_SECURE_BOOT).key == "firmware"  # type: ignore[union-attr]
    assert families.family_of("COMPUTE_STATUS_DISABLED") is None
    assert families.family_of("CUSTOM_GPU") is None


def test_property_table_is_the_request_filters_translation() -> None:
    table = dict(properties.requirements())
    assert next(iter(table)) == "disk_format"
    for name, rows in table.items():
        for row in rows:
            if name == "disk_format":
                expected = f"COMPUTE_IMAGE_TYPE_{row.value.upper()}"
            else:
                found = image_metadata_traits(parse_properties({name: row.value})).traits
                expected = next(iter(found), None)  # type: ignore[assignment]
            assert row.trait == expected, (name, row.value)
            assert row.trait is None or row.trait in vocabulary.KNOWN
    vif = {r.value: r.trait for r in table["hw_vif_model"]}
    assert vif["e1000"] == "COMPUTE_NET_VIF_MODEL_E1000"
    assert {r.value: r.trait for r in table["hw_architecture"]}["armv7l"] is None


def _summary(uuid: str, root: str, trait_names: list[str], **resources: tuple[int, int]
             ) -> ProviderSummary:
    return ProviderSummary(uuid, root, None if uuid == root else root, trait_names,
                           dict(resources))


def test_census_counts_available_roots_and_sums_their_trees() -> None:
    answer = Candidates([], {
        NODE_A: _summary(NODE_A, NODE_A, ["COMPUTE_NET_VIF_MODEL_E1000", "CUSTOM_RACK"],
                         VCPU=(2, 16), MEMORY_MB=(1024, 4096)),
        CHILD: _summary(CHILD, NODE_A, ["HW_CPU_X86_AVX2"], DISK_GB=(10, 100)),
        NODE_B: _summary(NODE_B, NODE_B, ["COMPUTE_NET_VIF_MODEL_E1000", "CUSTOM_RACK"],
                         VCPU=(0, 8), MEMORY_MB=(0, 2048), DISK_GB=(5, 50)),
        # Not available (disabled or down in the compute API's catalog).
        NODE_C: _summary(NODE_C, NODE_C, ["COMPUTE_NET_VIF_MODEL_E1000"], VCPU=(0, 64)),
    })
    offers = host_offers(answer, {NODE_A, NODE_B})
    assert sorted(offers, key=lambda o: o.free["VCPU"]) == [
        HostOffer(frozenset({"COMPUTE_NET_VIF_MODEL_E1000", "CUSTOM_RACK"}),
                  {"VCPU": 8, "MEMORY_MB": 2048, "DISK_GB": 45}),
        # A child's traits are not the host's (root_required); its resources are.
        HostOffer(frozenset({"COMPUTE_NET_VIF_MODEL_E1000", "CUSTOM_RACK"}),
                  {"VCPU": 14, "MEMORY_MB": 3072, "DISK_GB": 90}),
    ]
    assert census(offers) == {"COMPUTE_NET_VIF_MODEL_E1000": TraitOffer(
        2, {"VCPU": 22, "MEMORY_MB": 5120, "DISK_GB": 135})}


FREE = {"VCPU": 1, "MEMORY_MB": 2, "DISK_GB": 3}


def test_below_the_floor_reads_as_not_offered() -> None:
    shown = catalogue.build({"COMPUTE_NET_VIF_MODEL_E1000": TraitOffer(3, FREE),
                             "COMPUTE_NET_VIF_MODEL_PCNET": TraitOffer(1, FREE)}, 2,
                            catalogue.prefiltered_properties(False, True))
    nics = next(f for f in shown.families if f.key == "nic_models")
    assert [t.trait for t in nics.traits] == ["COMPUTE_NET_VIF_MODEL_E1000"]
    vif = next(p for p in shown.properties if p.property == "hw_vif_model")
    by_value = {v.value: v for v in vif.values}
    assert by_value["pcnet"] == by_value["pcnet"].__class__(
        "pcnet", "COMPUTE_NET_VIF_MODEL_PCNET", catalogue.Availability.NOT_OFFERED, None)
    assert (by_value["pcnet"].availability, by_value["pcnet"].hosts) == (
        by_value["rtl8139"].availability, by_value["rtl8139"].hosts)
    assert vif.checked_by is catalogue.CheckedBy.PLACEMENT
    disk = next(p for p in shown.properties if p.property == "disk_format")
    assert disk.checked_by is catalogue.CheckedBy.HOST


@given(st.dictionaries(st.sampled_from(sorted(vocabulary.KNOWN)), st.integers(1, 6)),
       st.integers(1, 5))
def test_no_count_below_the_floor_is_ever_shown(counts: dict[str, int], floor: int) -> None:
    shown = catalogue.to_json(catalogue.build(
        {t: TraitOffer(n, FREE) for t, n in counts.items()}, floor, frozenset()))
    listed = {t["trait"]: t["hosts"] for f in shown["families"] for t in f["traits"]}
    assert all(hosts >= floor for hosts in listed.values())
    assert listed == {t: n for t, n in counts.items()
                      if n >= floor and families.family_of(t) is not None}
    for prop in shown["image_properties"]:
        for value in prop["values"]:
            assert value["hosts"] is None or value["hosts"] >= floor
            assert (value["availability"] == "offered") == (value["trait"] in listed)


def test_cache_reads_once_per_interval() -> None:
    now = [100.0]
    cache = CensusCache(clock=lambda: now[0])
    reads: list[int] = []

    def read() -> dict[str, TraitOffer]:
        reads.append(1)
        return {"HW_CPU_X86_AVX2": TraitOffer(len(reads) + 1, FREE)}

    assert cache.get(10, read)["HW_CPU_X86_AVX2"].hosts == 2
    now[0] += 9.9
    assert cache.get(10, read)["HW_CPU_X86_AVX2"].hosts == 2
    now[0] += 0.1
    assert cache.get(10, read)["HW_CPU_X86_AVX2"].hosts == 3
    assert cache.get(0, read)["HW_CPU_X86_AVX2"].hosts == 4


def test_page_escapes_every_text() -> None:
    hostile = catalogue.Catalogue(2, (catalogue.FamilyEntry(
        "x<y", "<script>alert(1)</script>", (catalogue.TraitEntry(
            'A"><img src=x>', "<b>label</b>", 2, FREE),)),), (catalogue.PropertyEntry(
                "hw_<i>", catalogue.CheckedBy.HOST, (catalogue.ValueEntry(
                    "&amp;", "<T>", catalogue.Availability.OFFERED, 2),)),))
    rendered = page.render(hostile)
    for raw in ("<script", "<img", "<b>", "<i>", "<T>"):
        assert raw not in rendered
    assert "&lt;script&gt;" in rendered and "&amp;amp;" in rendered
    assert 'data-trait="A&quot;&gt;&lt;img src=x&gt;"' in rendered


def test_the_page_style_is_allowed_by_its_hash() -> None:
    import base64
    import hashlib
    digest = base64.b64encode(hashlib.sha256(page.STYLE.encode()).digest()).decode()
    assert f"'sha256-{digest}'" in page.CONTENT_SECURITY_POLICY
    assert f"<style>{page.STYLE}</style>" in page.render(catalogue.build({}, 2, frozenset()))


@pytest.mark.parametrize(("accept", "html"), [
    (None, False),
    ("application/json", False),
    ("*/*", False),
    ("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", True),
    ("application/json, text/html;q=0.5", False),
    ("text/html;q=0.2, application/json;q=0.1", True),
])
def test_html_only_when_preferred(accept: str | None, html: bool) -> None:
    assert prefers_html(accept) is html
