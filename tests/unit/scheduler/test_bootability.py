"""Which hosts can boot an image, today and with each prefilter on: one cloud of four
hosts, a table of images, one assertion each."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import pytest

from moorage.model.image import Image
from moorage.model.vocabulary import Prefilter
from moorage.scheduler.bootability import (
    PREFILTERS,
    HostTraits,
    Requirement,
    assess,
    configured_prefilters,
    image_requirements,
    not_reporting,
    parse_prefilter,
    required_under,
    unbootable_reason,
    unreported_families,
)
from moorage.scheduler.filter_records import Origin, OriginKind
from tests.unit.scheduler.fakes import conf

META, TYPE = Prefilter.IMAGE_METADATA, Prefilter.IMAGE_TYPE
X86 = "HW_ARCH_X86_64"

# kvm: a current libvirt agent; kvm-off: the same, disabled, the only one with SATA;
# esx: VMware; old: an agent that reports image types but no device model yet.
HOSTS = (
    HostTraits.of("kvm", ["COMPUTE_IMAGE_TYPE_QCOW2", "COMPUTE_IMAGE_TYPE_RAW", X86,
                          "COMPUTE_NET_VIF_MODEL_VIRTIO", "COMPUTE_NET_VIF_MODEL_E1000",
                          "COMPUTE_STORAGE_BUS_VIRTIO"]),
    HostTraits.of("kvm-off", ["COMPUTE_IMAGE_TYPE_QCOW2", "COMPUTE_NET_VIF_MODEL_VIRTIO",
                              "COMPUTE_STORAGE_BUS_SATA", "COMPUTE_STATUS_DISABLED"]),
    HostTraits.of("esx", ["COMPUTE_IMAGE_TYPE_VMDK", X86, "COMPUTE_NET_VIF_MODEL_E1000",
                          "COMPUTE_NET_VIF_MODEL_VMXNET3"]),
    HostTraits.of("old", ["COMPUTE_IMAGE_TYPE_QCOW2", "COMPUTE_IMAGE_TYPE_RAW"]),
)


def image(disk_format: str = "qcow2", **properties: str) -> Image:
    return Image.create("i", "img", disk_format,
                        properties={k.replace("__", ":"): v for k, v in properties.items()})


# image, configured today -> (today, with META, with TYPE, with all)
COUNTS: list[tuple[Image, frozenset[Prefilter], tuple[int, int, int, int]]] = [
    # every enabled host boots a plain image with no prefilter on; kvm-off never
    (image(), frozenset(), (3, 3, 2, 2)),
    (image("vmdk", hw_vif_model="e1000"), frozenset(), (3, 2, 1, 1)),
    # configured options count today, and stay on in the "with" columns
    (image("vmdk", hw_vif_model="e1000"), frozenset({TYPE}), (1, 1, 1, 1)),
    (image("vmdk", hw_vif_model="virtio"), frozenset(), (3, 1, 1, 0)),
    (image("vhd"), frozenset(), (3, 3, 0, 0)),
    # a trait:NAME=required property binds whatever the options
    (image(trait__CUSTOM_GPU="required"), frozenset(), (0, 0, 0, 0)),
    (image("raw", hw_architecture="x86_64"), frozenset(), (3, 2, 2, 1)),
    # a value os-traits has no trait for is not required (the filter notes it)
    (image(hw_architecture="armv7l"), frozenset({META}), (3, 3, 2, 2)),
]


@pytest.mark.parametrize(("img", "configured", "counts"), COUNTS)
def test_counts(img: Image, configured: frozenset[Prefilter],
                counts: tuple[int, int, int, int]) -> None:
    found = assess(img, HOSTS, configured)
    assert (found.hosts, found.with_prefilter[META], found.with_prefilter[TYPE],
            found.with_all) == counts


# image, planned -> the traits no host reports, as "TRAIT (origin)"
MISSING: list[tuple[Image, frozenset[Prefilter], list[str]]] = [
    (image("vhd"), frozenset(PREFILTERS), ["COMPUTE_IMAGE_TYPE_VHD (disk_format=vhd)"]),
    (image("vhd"), frozenset({META}), []),
    (image("vmdk", hw_video_model="qxl"), frozenset(PREFILTERS),
     ["COMPUTE_GRAPHICS_MODEL_QXL (hw_video_model=qxl)"]),
    # a disabled host still reports its traits: the trait is not missing
    (image(hw_disk_bus="sata"), frozenset({META}), []),
    (image(trait__CUSTOM_GPU="required"), frozenset(),
     ["CUSTOM_GPU (trait:CUSTOM_GPU=required)"]),
]


@pytest.mark.parametrize(("img", "planned", "expected"), MISSING)
def test_missing(img: Image, planned: frozenset[Prefilter], expected: list[str]) -> None:
    assert [str(r) for r in assess(img, HOSTS, frozenset(), planned).missing] == expected


# image, planned -> the enabled hosts that report no trait of a family it needs
NOT_REPORTING: list[tuple[Image, frozenset[Prefilter], Mapping[str, tuple[str, ...]]]] = [
    (image(hw_vif_model="e1000"), frozenset(PREFILTERS),
     {"COMPUTE_NET_VIF_MODEL": ("old",)}),
    # only the families the planned prefilters require
    (image(hw_vif_model="e1000"), frozenset({TYPE}), {}),
    (image(hw_disk_bus="virtio", hw_architecture="x86_64"), frozenset({META}),
     {"COMPUTE_STORAGE_BUS": ("esx", "old"), "HW_ARCH": ("old",)}),
    (image("vmdk"), frozenset(PREFILTERS), {}),
]


@pytest.mark.parametrize(("img", "planned", "expected"), NOT_REPORTING)
def test_not_reporting(img: Image, planned: frozenset[Prefilter],
                       expected: Mapping[str, tuple[str, ...]]) -> None:
    assert assess(img, HOSTS, frozenset(), planned).not_reporting == expected


STRANDED: list[tuple[Image, frozenset[Prefilter], bool]] = [
    (image("vhd"), frozenset(PREFILTERS), True),
    (image("vhd"), frozenset({META}), False),
    (image("vmdk", hw_vif_model="virtio"), frozenset(PREFILTERS), True),
    # unbootable today already: turning a prefilter on does not strand it
    (image(trait__CUSTOM_GPU="required"), frozenset(PREFILTERS), False),
    (image(), frozenset(PREFILTERS), False),
]


@pytest.mark.parametrize(("img", "planned", "stranded"), STRANDED)
def test_stranded(img: Image, planned: frozenset[Prefilter], stranded: bool) -> None:
    assert assess(img, HOSTS, frozenset(), planned).stranded is stranded


REASONS: list[tuple[Image, frozenset[Prefilter], str | None]] = [
    (image("vmdk"), frozenset({TYPE}), None),
    (image("vhd"), frozenset({TYPE}), "no enabled host can boot this image: no host "
     "reports COMPUTE_IMAGE_TYPE_VHD (disk_format=vhd)"),
    (image(hw_disk_bus="sata"), frozenset({META}), "no enabled host can boot this "
     "image: only disabled hosts report COMPUTE_STORAGE_BUS_SATA (hw_disk_bus=sata)"),
    (image("vmdk", hw_vif_model="virtio"), frozenset(PREFILTERS),
     "no enabled host can boot this image: no enabled host reports all of "
     "COMPUTE_IMAGE_TYPE_VMDK (disk_format=vmdk), "
     "COMPUTE_NET_VIF_MODEL_VIRTIO (hw_vif_model=virtio)"),
    (image("vhd", hw_video_model="qxl"), frozenset(PREFILTERS),
     "no enabled host can boot this image: no host reports COMPUTE_IMAGE_TYPE_VHD "
     "(disk_format=vhd); no host reports COMPUTE_GRAPHICS_MODEL_QXL (hw_video_model=qxl)"),
]


@pytest.mark.parametrize(("img", "options", "reason"), REASONS)
def test_unbootable_reason(img: Image, options: frozenset[Prefilter],
                           reason: str | None) -> None:
    needed = required_under(image_requirements(img), options)
    assert unbootable_reason(HOSTS, needed) == reason


def test_every_host_disabled_and_no_host_at_all() -> None:
    disabled = [HostTraits.of("a", ["COMPUTE_STATUS_DISABLED"]),
                HostTraits.of("b", ["COMPUTE_STATUS_DISABLED"])]
    assert unbootable_reason(disabled, ()) == (
        "no enabled host can boot this image: all 2 hosts are disabled")
    # no host registered yet: nothing to judge by, nothing refused
    assert unbootable_reason([], required_under(image_requirements(image("vhd")),
                                                PREFILTERS)) is None


def test_requirements_say_where_each_trait_comes_from() -> None:
    found = image_requirements(image("vmdk", hw_vif_model="VirtualE1000",
                                     hw_disk_bus="sata", trait__HW_CPU_X86_AVX2="required"))
    assert found == (
        Requirement("COMPUTE_IMAGE_TYPE_VMDK", Origin(OriginKind.IMAGE, "disk_format", "vmdk"),
                    TYPE),
        Requirement("COMPUTE_STORAGE_BUS_SATA",
                    Origin(OriginKind.IMAGE_PROPERTY, "hw_disk_bus", "sata"), META),
        Requirement("COMPUTE_NET_VIF_MODEL_E1000",
                    Origin(OriginKind.IMAGE_PROPERTY, "hw_vif_model", "e1000"), META),
        Requirement("HW_CPU_X86_AVX2",
                    Origin(OriginKind.IMAGE_PROPERTY, "trait:HW_CPU_X86_AVX2", "required"), None),
    )
    assert [str(r) for r in found] == [
        "COMPUTE_IMAGE_TYPE_VMDK (disk_format=vmdk)", "COMPUTE_STORAGE_BUS_SATA (hw_disk_bus=sata)",
        "COMPUTE_NET_VIF_MODEL_E1000 (hw_vif_model=e1000)",
        "HW_CPU_X86_AVX2 (trait:HW_CPU_X86_AVX2=required)"]
    assert [r.family for r in found] == [
        "COMPUTE_IMAGE_TYPE", "COMPUTE_STORAGE_BUS", "COMPUTE_NET_VIF_MODEL", None]


# prefilters on, traits in use -> families nobody reports
UNREPORTED: list[tuple[frozenset[Prefilter], set[str], dict[Prefilter, tuple[str, ...]]]] = [
    (frozenset(), set(), {}),
    (frozenset({TYPE}), {"COMPUTE_IMAGE_TYPE_RAW"}, {}),
    (frozenset({TYPE}), {"COMPUTE_NET_VIF_MODEL_E1000"}, {TYPE: ("COMPUTE_IMAGE_TYPE",)}),
    (frozenset({META}), {"COMPUTE_STORAGE_BUS_SATA", "COMPUTE_GRAPHICS_MODEL_QXL",
                         "COMPUTE_NET_VIF_MODEL_E1000", "HW_ARCH_X86_64",
                         "COMPUTE_ARCH_X86_64"}, {META: ("COMPUTE_VIOMMU_MODEL",)}),
    (frozenset({META}), {"COMPUTE_IMAGE_TYPE_RAW"}, {META: (
        "COMPUTE_STORAGE_BUS", "COMPUTE_GRAPHICS_MODEL", "COMPUTE_NET_VIF_MODEL",
        "HW_ARCH", "COMPUTE_ARCH", "COMPUTE_VIOMMU_MODEL")}),
]


@pytest.mark.parametrize(("on", "in_use", "expected"), UNREPORTED)
def test_unreported_families(on: frozenset[Prefilter], in_use: set[str],
                             expected: dict[Prefilter, tuple[str, ...]]) -> None:
    assert unreported_families(on, in_use) == expected


def test_not_reporting_ignores_disabled_hosts() -> None:
    assert not_reporting(HOSTS, ["COMPUTE_STORAGE_BUS"]) == {
        "COMPUTE_STORAGE_BUS": ("esx", "old")}


def test_prefilters_by_name_and_from_the_configuration() -> None:
    assert parse_prefilter("image_metadata_prefilter") is META
    with pytest.raises(ValueError, match="unknown prefilter 'image_metadata'; allowed: "
                       "image_metadata_prefilter, query_placement_for_image_type_support"):
        parse_prefilter("image_metadata")
    assert configured_prefilters(conf()) == frozenset()
    on = conf(scheduler__query_placement_for_image_type_support=True)
    assert configured_prefilters(on) == {TYPE}


# The same hosts with what their drivers report unsupported (the compute API's record):
# kvm refuses vmdk and vhd, esx qcow2, raw and virtio, and every vIOMMU model.
VIOMMU_ALL = ("COMPUTE_VIOMMU_MODEL_INTEL", "COMPUTE_VIOMMU_MODEL_SMMUV3",
              "COMPUTE_VIOMMU_MODEL_VIRTIO", "COMPUTE_VIOMMU_MODEL_AUTO")
REFUSED = {"kvm": {"COMPUTE_IMAGE_TYPE_VMDK", "COMPUTE_IMAGE_TYPE_VHD"},
           "esx": {"COMPUTE_IMAGE_TYPE_QCOW2", "COMPUTE_IMAGE_TYPE_RAW",
                   "COMPUTE_NET_VIF_MODEL_VIRTIO", *VIOMMU_ALL},
           "old": set(), "kvm-off": set()}
REPORTED = tuple(replace(h, refused=frozenset(REFUSED[h.name])) for h in HOSTS)


def test_today_counts_the_late_checks_the_hosts_reports_predict() -> None:
    # qcow2: esx refuses it at spawn today; without its reports it counted
    assert assess(image(), HOSTS, frozenset()).hosts == 3
    assert assess(image(), REPORTED, frozenset()).hosts == 2
    # vhd: kvm refuses, old and esx do not say: still bootable today, stranded after
    vhd = assess(image("vhd"), REPORTED, frozenset())
    assert (vhd.hosts, vhd.with_all, vhd.stranded) == (2, 0, True)
    # an image every host refuses today is not stranded by turning a prefilter on
    refused_by_all = tuple(replace(h, refused=frozenset({"COMPUTE_IMAGE_TYPE_VHD"}))
                           for h in HOSTS)
    assert not assess(image("vhd"), refused_by_all, frozenset()).stranded


def test_a_host_that_reports_a_family_false_cannot_and_is_not_not_yet() -> None:
    found = assess(image(hw_viommu_model="intel"), REPORTED, frozenset())
    assert found.not_reporting == {"COMPUTE_VIOMMU_MODEL": ("kvm", "old")}
    assert found.cannot == {"COMPUTE_IMAGE_TYPE_QCOW2": ("esx",),
                            "COMPUTE_VIOMMU_MODEL_INTEL": ("esx",)}
    # without the reports, esx looked like one more host not reporting yet
    assert assess(image(hw_viommu_model="intel"), HOSTS, frozenset()).not_reporting == {
        "COMPUTE_VIOMMU_MODEL": ("esx", "kvm", "old")}
    assert not_reporting(REPORTED, ["COMPUTE_VIOMMU_MODEL"]) == {
        "COMPUTE_VIOMMU_MODEL": ("kvm", "old")}
