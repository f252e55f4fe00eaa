"""NoValidHost reasons: each trait with where it came from, rejections by filter."""

from __future__ import annotations

from moorage.scheduler.explain import describe_rejections, describe_request, trait_origins
from moorage.scheduler.request_filters import FilterContext, process_request_spec
from moorage.scheduler.resource_request import resource_request
from moorage.scheduler.types import Rejection
from tests.unit.scheduler.fakes import FakeCatalog, conf, spec


def test_trait_origins() -> None:
    s = spec(extra_specs={"trait1:CUSTOM_A": "required", "trait:CUSTOM_B": "forbidden"},
             properties={"trait:CUSTOM_C": "required", "hw_vif_model": "e1000"},
             disk_format="vmdk")
    process_request_spec(s, FilterContext(conf(
        scheduler__image_metadata_prefilter=True,
        scheduler__query_placement_for_image_type_support=True), FakeCatalog()))
    origins = trait_origins(s)
    assert origins["CUSTOM_A"] == ["flavor extra spec trait1:CUSTOM_A=required"]
    assert origins["CUSTOM_B"] == ["flavor extra spec trait:CUSTOM_B=forbidden"]
    assert origins["CUSTOM_C"] == ["image property trait:CUSTOM_C=required"]
    assert origins["COMPUTE_NET_VIF_MODEL_E1000"] == ["image property hw_vif_model=e1000"]
    assert origins["COMPUTE_IMAGE_TYPE_VMDK"] == ["image disk_format=vmdk"]


def test_prefilter_origins_only_when_the_filter_ran() -> None:
    s = spec(properties={"hw_vif_model": "e1000"})
    process_request_spec(s, FilterContext(conf(), FakeCatalog()))
    assert "COMPUTE_NET_VIF_MODEL_E1000" not in trait_origins(s)


def test_describe_request() -> None:
    s = spec(extra_specs={"trait:CUSTOM_SLOW": "forbidden"},
             properties={"hw_vif_model": "e1000"})
    process_request_spec(s, FilterContext(conf(scheduler__image_metadata_prefilter=True),
                                          FakeCatalog()))
    s.member_of.append(frozenset({"u1"}))
    text = describe_request(resource_request(s), s, {"u1": "rack1"})
    assert text == (
        "resources VCPU=2,MEMORY_MB=512,DISK_GB=1; "
        "forbidden traits CUSTOM_SLOW (from flavor extra spec trait:CUSTOM_SLOW=forbidden); "
        "in one of aggregates rack1 (u1); "
        "required host traits COMPUTE_NET_VIF_MODEL_E1000 (from image property "
        "hw_vif_model=e1000); "
        "forbidden host traits COMPUTE_STATUS_DISABLED (from request filter "
        "compute_status_filter: no disabled host)")


def test_describe_rejections() -> None:
    rejections = [Rejection("ComputeFilter", "h1", "disabled"),
                  Rejection("ImagePropertiesFilter", "h3", "runs x86_64/qemu/hvm, image "
                            "needs aarch64/*/*"),
                  Rejection("ComputeFilter", "h2", "down")]
    assert describe_rejections(3, rejections) == (
        "all 3 candidate hosts were rejected: ComputeFilter rejected 2 (1 disabled, "
        "1 down); ImagePropertiesFilter rejected 1 (1 runs x86_64/qemu/hvm, image needs "
        "aarch64/*/*)")
    assert describe_rejections(1, rejections[:1]).startswith("all 1 candidate host was")


def test_many_rejections_are_counted_by_reason_and_no_host_is_named() -> None:
    """A request widened to a thousand candidates: the message stays a line, naming
    each reason and how many hosts it rejected, and no host (the message is the
    user's; hosts are in the decisions, for admins)."""
    rejections = [Rejection("ImagePropertiesFilter", f"x{n}", "runs x86_64/qemu/hvm, "
                            "image needs aarch64/*/*") for n in range(997)]
    rejections += [Rejection("ImagePropertiesFilter", f"p{n}", "runs ppc64le/qemu/hvm, "
                             "image needs aarch64/*/*") for n in range(2)]
    rejections.append(Rejection("ComputeFilter", "down1", "down"))
    message = describe_rejections(1000, rejections)
    assert message == (
        "all 1000 candidate hosts were rejected: ImagePropertiesFilter rejected 999 "
        "(997 runs x86_64/qemu/hvm, image needs aarch64/*/*, 2 runs ppc64le/qemu/hvm, "
        "image needs aarch64/*/*); ComputeFilter rejected 1 (1 down)")
    assert "x0" not in message and "down1" not in message
