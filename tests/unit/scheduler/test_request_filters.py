"""Each request filter, on and off: what it adds to the spec and what it records."""

from __future__ import annotations

import pytest

from moorage.model import vocabulary
from moorage.model.image import ImageProperties, parse_properties
from moorage.scheduler.filter_records import Addition, Constraint, Origin, OriginKind
from moorage.scheduler.request_filters import (
    ALL_REQUEST_FILTERS,
    UNTRANSLATED_PROPERTIES,
    FilterContext,
    RequestFilter,
    RequestFilterFailed,
    compute_status_filter,
    image_metadata_traits,
    image_type_trait,
    isolate_aggregates,
    map_az_to_placement_aggregate,
    process_request_spec,
    require_image_type_support,
    require_tenant_aggregate,
    transform_image_metadata,
)
from moorage.scheduler.types import Aggregate, RequestSpec
from tests.unit.scheduler.fakes import FakeCatalog, conf, spec


def ctx(catalog: FakeCatalog | None = None, /, **options: object) -> FilterContext:
    return FilterContext(conf(**options), catalog or FakeCatalog())


# -- image metadata -> traits ----------------------------------------------------------
@pytest.mark.parametrize(("prop", "value", "trait"), [
    ("hw_cdrom_bus", "ide", "COMPUTE_STORAGE_BUS_IDE"),
    ("hw_disk_bus", "sata", "COMPUTE_STORAGE_BUS_SATA"),
    ("hw_video_model", "qxl", "COMPUTE_GRAPHICS_MODEL_QXL"),
    ("hw_vif_model", "e1000", "COMPUTE_NET_VIF_MODEL_E1000"),
    ("hw_vif_model", "spapr-vlan", "COMPUTE_NET_VIF_MODEL_SPAPR_VLAN"),
    # upstream's legacy aliases, canonicalized when the image is parsed
    ("hw_vif_model", "VirtualE1000", "COMPUTE_NET_VIF_MODEL_E1000"),
    ("hw_vif_model", "VirtualVmxnet3", "COMPUTE_NET_VIF_MODEL_VMXNET3"),
    ("hw_architecture", "x86_64", "HW_ARCH_X86_64"),
    ("hw_architecture", "amd64", "HW_ARCH_X86_64"),
    ("hw_architecture", "i386", "HW_ARCH_I686"),
    ("hw_emulation_architecture", "aarch64", "COMPUTE_ARCH_AARCH64"),
    # os-traits' real prefix, where upstream computes a name that does not exist
    ("hw_viommu_model", "virtio", "COMPUTE_VIOMMU_MODEL_VIRTIO"),
    ("hw_viommu_model", "intel", "COMPUTE_VIOMMU_MODEL_INTEL"),
])
def test_property_becomes_trait(prop: str, value: str, trait: str) -> None:
    translation = image_metadata_traits(parse_properties({prop: value}))
    assert set(translation.traits) == {trait}
    origin = translation.traits[trait]
    assert (origin.kind, origin.name) == (OriginKind.IMAGE_PROPERTY, prop)
    assert translation.notes == ()


@pytest.mark.parametrize(("prop", "value", "missing"), [
    ("hw_architecture", "armv7l", "HW_ARCH_ARMV7L"),
    ("hw_emulation_architecture", "i686", "COMPUTE_ARCH_I686"),
])
def test_value_without_trait_is_noted_and_others_still_apply(prop: str, value: str,
                                                             missing: str) -> None:
    props = parse_properties({prop: value, "hw_vif_model": "e1000"})
    translation = image_metadata_traits(props)
    assert set(translation.traits) == {"COMPUTE_NET_VIF_MODEL_E1000"}
    (note,) = translation.notes
    assert f"{prop}={value}" in note and missing in note


@pytest.mark.parametrize(("prop", "value", "family"), [
    ("img_hv_type", "kvm", "COMPUTE_HYPERVISOR"),
    ("hypervisor_type", "vmware", "COMPUTE_HYPERVISOR"),  # the legacy name
    ("hw_vm_mode", "hvm", "COMPUTE_VM_MODE"),
    ("vm_mode", "exe", "COMPUTE_VM_MODE"),
])
def test_hypervisor_type_and_vm_mode_are_noted_for_want_of_traits(
        prop: str, value: str, family: str) -> None:
    translation = image_metadata_traits(parse_properties({prop: value,
                                                          "hw_vif_model": "e1000"}))
    assert set(translation.traits) == {"COMPUTE_NET_VIF_MODEL_E1000"}
    assert translation.notes == (
        f"{prop}={value}: os-traits {vocabulary.OS_TRAITS_VERSION} has no {family}_* traits, so "
        "placement cannot check it; ImagePropertiesFilter checks it among the candidates",)


def test_os_traits_still_has_no_hypervisor_or_vm_mode_traits() -> None:
    """When os-traits names them, these properties become prefilter traits: this fails
    until the request filter translates them."""
    for _names, family in UNTRANSLATED_PROPERTIES:
        assert vocabulary.family(family) == frozenset(), family


def test_unset_properties_add_nothing() -> None:
    assert image_metadata_traits(ImageProperties()).traits == {}


def test_transform_image_metadata_off_by_default() -> None:
    s = spec(properties={"hw_vif_model": "e1000"})
    record = transform_image_metadata(s, ctx())
    assert not record.ran and not s.root_required


def test_transform_image_metadata_on() -> None:
    s = spec(properties={"hw_vif_model": "e1000", "hw_disk_bus": "sata",
                         "hw_architecture": "armv7l"})
    record = transform_image_metadata(s, ctx(scheduler__image_metadata_prefilter=True))
    assert record.ran
    assert s.root_required == {"COMPUTE_NET_VIF_MODEL_E1000", "COMPUTE_STORAGE_BUS_SATA"}
    assert Addition(Constraint.ROOT_REQUIRED, ("COMPUTE_NET_VIF_MODEL_E1000",),
                    Origin(OriginKind.IMAGE_PROPERTY, "hw_vif_model", "e1000"),
                    "the host must offer what the image asks for") in record.added
    assert len(record.notes) == 1 and "armv7l" in record.notes[0]


def test_transform_image_metadata_applies_to_volume_backed_servers() -> None:
    s = spec(properties={"hw_vif_model": "e1000"}, is_bfv=True)
    transform_image_metadata(s, ctx(scheduler__image_metadata_prefilter=True))
    assert s.root_required == {"COMPUTE_NET_VIF_MODEL_E1000"}


# -- image type ------------------------------------------------------------------------
@pytest.mark.parametrize(("disk_format", "trait"), [
    ("qcow2", "COMPUTE_IMAGE_TYPE_QCOW2"), ("vmdk", "COMPUTE_IMAGE_TYPE_VMDK"),
    ("raw", "COMPUTE_IMAGE_TYPE_RAW"), ("ploop", "COMPUTE_IMAGE_TYPE_PLOOP"),
])
def test_image_type_trait(disk_format: str, trait: str) -> None:
    assert image_type_trait(disk_format) == trait


def test_require_image_type_support_off_by_default() -> None:
    s = spec(disk_format="vmdk")
    assert not require_image_type_support(s, ctx()).ran
    assert not s.root_required


def test_require_image_type_support_on() -> None:
    s = spec(disk_format="vmdk")
    record = require_image_type_support(
        s, ctx(scheduler__query_placement_for_image_type_support=True))
    assert s.root_required == {"COMPUTE_IMAGE_TYPE_VMDK"}
    assert record.added == (Addition(
        Constraint.ROOT_REQUIRED, ("COMPUTE_IMAGE_TYPE_VMDK",),
        Origin(OriginKind.IMAGE, "disk_format", "vmdk"),
        "the host must read the image's disk format"),)


def test_require_image_type_support_skips_volume_backed() -> None:
    s = spec(disk_format="vmdk", is_bfv=True)
    record = require_image_type_support(
        s, ctx(scheduler__query_placement_for_image_type_support=True))
    assert not s.root_required and not record.ran and record.notes


# -- compute status --------------------------------------------------------------------
def test_compute_status_filter_always_forbids_disabled() -> None:
    s = spec()
    record = compute_status_filter(s, ctx())
    assert record.ran and s.root_forbidden == {"COMPUTE_STATUS_DISABLED"}


# -- aggregates ------------------------------------------------------------------------
def agg(uuid: str, metadata: dict[str, str] | None = None, zone: str | None = None
        ) -> Aggregate:
    return Aggregate(uuid, f"agg-{uuid}", frozenset({"h1"}), metadata or {}, zone)


def test_tenant_aggregate_off_by_default() -> None:
    s = spec()
    catalog = FakeCatalog(aggregate_list=[agg("a1", {"filter_tenant_id": "project-a"})])
    assert not require_tenant_aggregate(s, ctx(catalog)).ran and not s.member_of


def test_tenant_aggregates_limit_the_project() -> None:
    catalog = FakeCatalog(aggregate_list=[
        agg("a1", {"filter_tenant_id": "project-a"}),
        agg("a2", {"filter_tenant_id2": "project-a"}),
        agg("a3", {"filter_tenant_id": "project-b"}),
    ])
    s = spec()
    record = require_tenant_aggregate(
        s, ctx(catalog, scheduler__limit_tenants_to_placement_aggregate=True))
    assert s.member_of == [frozenset({"a1", "a2"})]
    assert [(a.constraint, a.names) for a in record.added] == [
        (Constraint.MEMBER_OF, ("a1", "a2"))]


def test_tenant_without_aggregate() -> None:
    s = spec()
    options = {"scheduler__limit_tenants_to_placement_aggregate": True}
    record = require_tenant_aggregate(s, ctx(**options))
    assert not s.member_of and record.notes
    with pytest.raises(RequestFilterFailed, match="project-a"):
        require_tenant_aggregate(s, ctx(
            **options, scheduler__placement_aggregate_required_for_tenants=True))


def test_availability_zone_maps_to_aggregates() -> None:
    catalog = FakeCatalog(aggregate_list=[agg("a1", zone="az1"),
                                          agg("a2", {"availability_zone": "az1"}),
                                          agg("a3", zone="az2")])
    s = spec(availability_zone="az1")
    map_az_to_placement_aggregate(s, ctx(catalog))
    assert s.member_of == [frozenset({"a1", "a2"})]
    off = spec(availability_zone="az1")
    assert not map_az_to_placement_aggregate(
        off, ctx(catalog, scheduler__query_placement_for_availability_zone=False)).ran
    assert not off.member_of


def test_unknown_zone_is_noted() -> None:
    s = spec(availability_zone="nowhere")
    record = map_az_to_placement_aggregate(s, ctx())
    assert not s.member_of and "nowhere" in record.notes[0]


def test_isolate_aggregates() -> None:
    catalog = FakeCatalog(aggregate_list=[
        agg("gpu", {"trait:CUSTOM_GPU": "required"}),
        agg("fast", {"trait:CUSTOM_FAST": "required", "trait:CUSTOM_SSD": "required"}),
        agg("plain", {"other": "x"}),
    ])
    options = {"scheduler__enable_isolated_aggregate_filtering": True}
    s = spec()
    isolate_aggregates(s, ctx(catalog, **options))
    assert s.forbidden_aggregates == {"gpu", "fast"}
    # the flavor requires CUSTOM_GPU, the image CUSTOM_FAST: only "fast" still lacks one
    s = spec(extra_specs={"trait:CUSTOM_GPU": "required"},
             properties={"trait:CUSTOM_FAST": "required"})
    isolate_aggregates(s, ctx(catalog, **options))
    assert s.forbidden_aggregates == {"fast"}
    off = spec()
    assert not isolate_aggregates(off, ctx(catalog)).ran and not off.forbidden_aggregates


# -- the pipeline ----------------------------------------------------------------------
def test_process_records_every_filter_in_order_and_starts_afresh() -> None:
    s = spec(properties={"hw_vif_model": "e1000"})
    s.root_required.add("STALE")
    context = ctx(scheduler__image_metadata_prefilter=True)
    process_request_spec(s, context)
    process_request_spec(s, context)
    assert [r.name for r in s.filter_records] == [f.__name__ for f in ALL_REQUEST_FILTERS]
    assert s.root_required == {"COMPUTE_NET_VIF_MODEL_E1000"}
    assert s.root_forbidden == {"COMPUTE_STATUS_DISABLED"}


def test_process_records_a_failing_filter() -> None:
    s = spec()
    with pytest.raises(RequestFilterFailed):
        process_request_spec(s, ctx(
            scheduler__limit_tenants_to_placement_aggregate=True,
            scheduler__placement_aggregate_required_for_tenants=True))
    assert s.filter_records[-1].name == "require_tenant_aggregate"
    assert s.filter_records[-1].notes


# -- what each filter records: the constraint, from which origin, and why ----------------
TENANTS = FakeCatalog(aggregate_list=[agg("a2", {"filter_tenant_id2": "project-a"}),
                                      agg("a1", {"filter_tenant_id": "project-a"})])
ZONES = FakeCatalog(aggregate_list=[agg("a1", zone="az1"), agg("a3", zone="az2")])
ISOLATED = FakeCatalog(aggregate_list=[
    agg("gpu", {"trait:CUSTOM_GPU": "required"}),
    agg("fast", {"trait:CUSTOM_SSD": "required", "trait:CUSTOM_FAST": "required"})])
ON = {"scheduler__limit_tenants_to_placement_aggregate": True,
      "scheduler__query_placement_for_image_type_support": True,
      "scheduler__enable_isolated_aggregate_filtering": True,
      "scheduler__image_metadata_prefilter": True}
RECORDS: list[tuple[RequestSpec, FakeCatalog, list[tuple[Constraint, tuple[str, ...], Origin,
                                                         str]]]] = [
    (spec(), TENANTS, [(Constraint.MEMBER_OF, ("a1", "a2"),
                        Origin(OriginKind.AGGREGATE_METADATA, "filter_tenant_id*", "project-a"),
                        "the aggregates that admit the project")]),
    (spec(availability_zone="az1"), ZONES, [
        (Constraint.MEMBER_OF, ("a1",),
         Origin(OriginKind.AGGREGATE_METADATA, "availability_zone", "az1"),
         "the requested availability zone")]),
    (spec(disk_format="raw"), FakeCatalog(), [
        (Constraint.ROOT_REQUIRED, ("COMPUTE_IMAGE_TYPE_RAW",),
         Origin(OriginKind.IMAGE, "disk_format", "raw"),
         "the host must read the image's disk format")]),
    (spec(), FakeCatalog(), [
        (Constraint.ROOT_FORBIDDEN, ("COMPUTE_STATUS_DISABLED",),
         Origin(OriginKind.REQUEST_FILTER, "compute_status_filter"), "no disabled host")]),
    (spec(extra_specs={"trait:CUSTOM_FAST": "required"}), ISOLATED, [
        (Constraint.FORBIDDEN_AGGREGATES, ("fast",),
         Origin(OriginKind.AGGREGATE_METADATA, "trait:CUSTOM_SSD", "required"),
         "reserved for servers that require CUSTOM_SSD"),
        (Constraint.FORBIDDEN_AGGREGATES, ("gpu",),
         Origin(OriginKind.AGGREGATE_METADATA, "trait:CUSTOM_GPU", "required"),
         "reserved for servers that require CUSTOM_GPU")]),
    (spec(properties={"hw_vif_model": "VirtualE1000", "hw_architecture": "x86_64"}),
     FakeCatalog(), [
         (Constraint.ROOT_REQUIRED, ("COMPUTE_NET_VIF_MODEL_E1000",),
          Origin(OriginKind.IMAGE_PROPERTY, "hw_vif_model", "e1000"),
          "the host must offer what the image asks for"),
         (Constraint.ROOT_REQUIRED, ("HW_ARCH_X86_64",),
          Origin(OriginKind.IMAGE_PROPERTY, "hw_architecture", "x86_64"),
          "the host must offer what the image asks for")]),
]


@pytest.mark.parametrize(("request_filter", "case"),
                         list(zip(ALL_REQUEST_FILTERS, RECORDS, strict=True)),
                         ids=[f.__name__ for f in ALL_REQUEST_FILTERS])
def test_each_filter_records_what_from_where_and_why(
        request_filter: RequestFilter, case: tuple[RequestSpec, FakeCatalog, list[
            tuple[Constraint, tuple[str, ...], Origin, str]]]) -> None:
    s, catalog, expected = case
    record = request_filter(s, ctx(catalog, **ON))
    assert record.name == request_filter.__name__ and record.ran
    assert [(a.constraint, a.names, a.origin, a.why) for a in record.added] == expected


def test_isolation_names_every_trait_the_request_lacks() -> None:
    (addition,) = isolate_aggregates(spec(), ctx(FakeCatalog(aggregate_list=[
        agg("fast", {"trait:CUSTOM_SSD": "required", "trait:CUSTOM_FAST": "required"})]),
        scheduler__enable_isolated_aggregate_filtering=True)).added
    assert addition.why == "reserved for servers that require CUSTOM_FAST, CUSTOM_SSD"
    assert addition.origin.setting == "trait:CUSTOM_FAST=required"
