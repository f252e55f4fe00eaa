"""Host filters: each as a table of hosts and specs, with the reason it gives."""

from __future__ import annotations

import pytest

from moorage.scheduler.host_filters import (
    HOST_FILTERS,
    FilterOptions,
    HostState,
    UnknownHostFilter,
    aggregate_extra_specs_match,
    compute_service_usable,
    enabled_filters,
    image_properties_supported,
    in_requested_zone,
    run_filters,
    version_satisfies,
    version_string,
)
from moorage.scheduler.types import Aggregate, HostInfo, Liveness
from tests.unit.scheduler.fakes import spec

OPTIONS = FilterOptions()
X86_QEMU = ("x86_64", "qemu", "hvm")


def host(name: str = "h1", *, enabled: bool = True, up: bool = True,
         supported: tuple[tuple[str, str, str], ...] = (X86_QEMU,),
         version: int | None = 7002000, aggregates: tuple[Aggregate, ...] = ()) -> HostState:
    return HostState(HostInfo(name, [name], enabled, Liveness.fixed(up), "libvirt", supported,
                              version), aggregates)


@pytest.mark.parametrize(("state", "reason"), [
    (host(), None),
    (host(enabled=False), "disabled"),
    (host(up=False), "down"),
    (host(enabled=False, up=False), "disabled"),
])
def test_compute_filter(state: HostState, reason: str | None) -> None:
    assert compute_service_usable(state, spec(), OPTIONS) == reason


def zone(uuid: str, name: str) -> Aggregate:
    return Aggregate(uuid, uuid, frozenset({"h1"}), {}, name)


@pytest.mark.parametrize(("aggregates", "requested", "passes"), [
    ((), None, True),
    ((), "nova", True),  # in no zone aggregate: the default zone
    ((), "az1", False),
    ((zone("a", "az1"),), "az1", True),
    ((zone("a", "az1"),), "nova", False),
    ((zone("a", "az1"),), "az2", False),
])
def test_availability_zone_filter(aggregates: tuple[Aggregate, ...], requested: str | None,
                                  passes: bool) -> None:
    reason = in_requested_zone(host(aggregates=aggregates),
                               spec(availability_zone=requested), OPTIONS)
    assert (reason is None) is passes
    if not passes:
        assert f"not {requested}" in str(reason)


@pytest.mark.parametrize(("properties", "state", "passes"), [
    ({}, host(supported=()), True),  # the image asks nothing
    ({"hw_architecture": "x86_64"}, host(), True),
    ({"hw_architecture": "amd64"}, host(), True),  # alias
    ({"hw_architecture": "aarch64"}, host(), False),
    ({"hw_architecture": "x86_64"}, host(supported=()), False),
    ({"img_hv_type": "qemu"}, host(), True),
    ({"img_hv_type": "vmware"}, host(), False),
    ({"hypervisor_type": "vmware"}, host(), False),  # legacy name
    ({"hw_vm_mode": "hvm"}, host(), True),
    ({"vm_mode": "xen"}, host(), False),
    ({"hw_vm_mode": "hv"}, host(), True),  # alias of hvm
    ({"hw_architecture": "x86_64", "img_hv_requested_version": ">=7.0"}, host(), True),
    ({"hw_architecture": "x86_64", "img_hv_requested_version": ">=8.0"}, host(), False),
    ({"hw_architecture": "x86_64", "hypervisor_version_requires": "<7.2"}, host(), False),
    ({"hw_architecture": "x86_64", "img_hv_requested_version": ">=8.0"},
     host(version=None), True),  # no version known: not checked
    # a requirement that cannot be read is one no known version satisfies
    ({"hw_architecture": "x86_64", "img_hv_requested_version": "new"}, host(), False),
    ({"hw_architecture": "x86_64", "img_hv_requested_version": "new"},
     host(version=None), True),
    ({"hw_architecture": "aarch64"},
     host(supported=(X86_QEMU, ("aarch64", "qemu", "hvm"))), True),
])
def test_image_properties_filter(properties: dict[str, str], state: HostState,
                                 passes: bool) -> None:
    reason = image_properties_supported(state, spec(properties=properties), OPTIONS)
    assert (reason is None) is passes, reason


def test_image_properties_default_architecture() -> None:
    options = FilterOptions(default_architecture="aarch64")
    reason = image_properties_supported(host(), spec(), options)
    assert reason == "runs x86_64/qemu/hvm, image needs aarch64/*/*"


@pytest.mark.parametrize(("version", "requirement", "expected"), [
    (7002000, ">=7.2", True), (7002000, ">7.2", False), (7002000, "==7.2.0", True),
    (2006000, ">=2.6,<3", True), (3000000, ">=2.6,<3", False), (7002000, "new", None),
])
def test_version_satisfies(version: int, requirement: str, expected: bool | None) -> None:
    assert version_satisfies(version, requirement) is expected


def test_version_string() -> None:
    assert version_string(7002001) == "7.2.1"


@pytest.mark.parametrize(("extra_specs", "metadata", "passes"), [
    ({}, {}, True),
    ({"ssd": "true"}, {"ssd": "true"}, True),
    ({"aggregate_instance_extra_specs:ssd": "true"}, {"ssd": "true"}, True),
    ({"ssd": "true"}, {}, False),
    ({"ssd": "true"}, {"ssd": "false"}, False),
    ({"tier": "<or> gold <or> silver"}, {"tier": "silver"}, True),
    ({"tier": "<in> old"}, {"tier": "gold"}, True),
    # other scopes and group_policy are not this filter's
    ({"hw:cpu_policy": "dedicated", "trait:X": "required", "group_policy": "none"}, {}, True),
])
def test_aggregate_instance_extra_specs(extra_specs: dict[str, str],
                                        metadata: dict[str, str], passes: bool) -> None:
    state = host(aggregates=(Aggregate("a", "a", frozenset({"h1"}), metadata),))
    reason = aggregate_extra_specs_match(state, spec(extra_specs=extra_specs), OPTIONS)
    assert (reason is None) is passes


def test_run_on_rebuild_as_upstream() -> None:
    assert {n for n, f in HOST_FILTERS.items() if f.run_on_rebuild} == {"ImagePropertiesFilter"}


def test_enabled_filters_in_order_and_unknown_named() -> None:
    names = ["ImagePropertiesFilter", "ComputeFilter"]
    assert [f.name for f in enabled_filters(names)] == names
    with pytest.raises(UnknownHostFilter, match="RamFilter"):
        enabled_filters(["ComputeFilter", "RamFilter"])


def test_run_filters_records_first_rejection() -> None:
    hosts = [host("h1"), host("h2", enabled=False), host("h3", up=False, supported=())]
    s = spec(properties={"hw_architecture": "x86_64"})
    passing, rejections = run_filters(
        hosts, s, enabled_filters(["ComputeFilter", "ImagePropertiesFilter"]), OPTIONS)
    assert [h.name for h in passing] == ["h1"]
    assert [(r.filter, r.host, r.reason) for r in rejections] == [
        ("ComputeFilter", "h2", "disabled"), ("ComputeFilter", "h3", "down")]
