"""Play a cloud's workload under each scheduling configuration, with the real services.

For every configuration the player starts a fresh embedded cloud (placement, the
compute API with its conductor and scheduler, one compute agent per described
host), creates the flavors and images through the compute API, boots the workload
one server at a time exactly as a user would, and reads back from each server what
happened: where it went, how many spawns it took, how many candidates placement
offered, how long scheduling took, and, for a failure, which constraint left no
host. Nothing is estimated: every figure comes from the services.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from moorage.api.client import ComputeApiClient
from moorage.embedded import EmbeddedCloud, HostPlan
from moorage.placement.client import PlacementClient, PlacementError
from moorage.run.results import BootResult, Configuration, ConfigurationResult, Exclusion

LOG = logging.getLogger(__name__)

_OFF = [("scheduler", "image_metadata_prefilter", False),
        ("scheduler", "query_placement_for_image_type_support", False)]
_COMPUTE_ONLY = ("filter_scheduler", "enabled_filters", ["ComputeFilter"])

CONFIGURATIONS: tuple[Configuration, ...] = (
    Configuration("prefilters off",
                  "no prefilter and no image host filter: placement sees only resources "
                  "and the flavor's and image's explicit traits",
                  [*_OFF, _COMPUTE_ONLY]),
    Configuration("image type",
                  "[scheduler] query_placement_for_image_type_support: disk_format "
                  "becomes a required COMPUTE_IMAGE_TYPE_* trait",
                  [_OFF[0], ("scheduler", "query_placement_for_image_type_support", True),
                   _COMPUTE_ONLY]),
    Configuration("image metadata",
                  "[scheduler] image_metadata_prefilter: hw_vif_model, hw_disk_bus, "
                  "hw_video_model, ... become required traits",
                  [("scheduler", "image_metadata_prefilter", True), _OFF[1],
                   _COMPUTE_ONLY]),
    Configuration("both",
                  "both prefilters on",
                  [("scheduler", "image_metadata_prefilter", True),
                   ("scheduler", "query_placement_for_image_type_support", True),
                   _COMPUTE_ONLY]),
    Configuration("legacy ImagePropertiesFilter",
                  "no prefilter; the host filter ImagePropertiesFilter checks "
                  "hw_architecture, img_hv_type and hw_vm_mode after placement",
                  [*_OFF, ("filter_scheduler", "enabled_filters",
                           ["ComputeFilter", "ImagePropertiesFilter"])]),
)

FINAL = frozenset({"ACTIVE", "ERROR"})

# A run's databases are thrown away afterwards: no fsync per commit (synchronous=NORMAL,
# still safe against a crash of the process).
THROWAWAY_DATABASES: tuple[tuple[str, str, object], ...] = (
    ("database", "sqlite_synchronous", False),
    ("placement_database", "sqlite_synchronous", False),
)

Progress = Callable[[str, int, int], None]


class PlayError(RuntimeError):
    """The run could not be played (a service failed to start, an API refused the
    cloud's catalogue)."""


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def play(configuration: Configuration, plans: Sequence[HostPlan],
         flavors: Sequence[Mapping[str, Any]], images: Sequence[Mapping[str, Any]],
         boots: Sequence[tuple[str, str]], workdir: Path, *,
         progress: Progress | None = None, boot_timeout: float = 120.0,
         overrides: Sequence[tuple[str, str, object]] = ()) -> ConfigurationResult:
    """Boot ``boots`` ((image name, flavor name) pairs, in order) on a fresh cloud of
    ``plans`` scheduled as ``configuration`` says."""
    cloud = EmbeddedCloud(workdir / _slug(configuration.name), plans,
                          overrides=[*THROWAWAY_DATABASES, *configuration.options,
                                     *overrides],
                          api_port=0, placement_port=0)
    result = ConfigurationResult(configuration)
    started = time.perf_counter()
    cloud.start()
    try:
        api = ComputeApiClient(cloud.api_url, "admin")
        placement = PlacementClient(cloud.placement_url, "admin")
        flavor_ids = {f["name"]: str(api.create_flavor(
            f["name"], int(f["ram"]), int(f["vcpus"]), int(f.get("disk", 0)),
            extra_specs=f.get("extra_specs") or None)["id"]) for f in flavors}
        image_ids = {i["name"]: str(api.create_image(
            i["name"], disk_format=i.get("disk_format"),
            container_format=i.get("container_format", "bare"),
            properties=i.get("properties") or None)["id"]) for i in images}
        hosts_total = _compute_nodes(placement)
        for index, (image, flavor) in enumerate(boots):
            if progress is not None:
                progress(configuration.name, index, len(boots))
            server = _boot(api, f"vm-{index}", flavor_ids[flavor], image_ids[image],
                           boot_timeout)
            result.boots.append(_result(index, image, flavor, server, placement,
                                        hosts_total))
        if progress is not None:
            progress(configuration.name, len(boots), len(boots))
        # The cloud is thrown away; only guests that are real QEMU processes need
        # deleting (a server on a simulated host vanishes with its agent).
        real = {plan.name for plan in plans if plan.driver == "libvirt"}
        for server in api.servers():
            if server.get("OS-EXT-SRV-ATTR:host") in real:
                api.delete_server(str(server["id"]))
        _wait_deleted(api, boot_timeout, real)
    finally:
        cloud.stop()
    result.wall_seconds = time.perf_counter() - started
    return result


def _boot(api: ComputeApiClient, name: str, flavor: str, image: str,
          timeout: float) -> dict[str, Any]:
    uuid = str(api.create_server(name, flavor, image)["id"])
    deadline = time.monotonic() + timeout
    while True:
        server = api.server(uuid)
        if server["status"] in FINAL and server.get("OS-EXT-STS:task_state") is None:
            return server
        if time.monotonic() > deadline:
            raise PlayError(f"server {name} still {server['status']} after {timeout:g}s")
        time.sleep(0.005)


def _wait_deleted(api: ComputeApiClient, timeout: float, hosts: set[str]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(
            s.get("OS-EXT-SRV-ATTR:host") in hosts for s in api.servers()):
        time.sleep(0.02)


def _fault_kind(server: Mapping[str, Any]) -> str | None:
    fault = server.get("fault")
    if not fault:
        return None
    message = str(fault.get("message", ""))
    if message.startswith("No valid host was found."):
        return "NoValidHost"
    details = fault.get("details") or {}
    return str(details.get("kind") or "BuildFailed")


def _result(index: int, image: str, flavor: str, server: Mapping[str, Any],
            placement: PlacementClient, hosts_total: int) -> BootResult:
    scheduling = server.get("moorage:scheduling") or {}
    attempts = [a for a in scheduling.get("attempts", [])
                if a.get("result") in ("ok", "failed")]
    kind = _fault_kind(server)
    fault = server.get("fault") or {}
    exclusions: list[Exclusion] = []
    if kind == "NoValidHost":
        exclusions = exclusions_of(fault.get("details") or {}, scheduling, placement,
                                   hosts_total)
    elif kind is not None:
        exclusions = late_exclusions(attempts, hosts_total)
    candidates = scheduling.get("candidates")
    if candidates is None and kind == "NoValidHost":
        candidates = (fault.get("details") or {}).get("candidates", 0)
    return BootResult(
        index=index, image=image, flavor=flavor, status=str(server["status"]),
        host=server.get("OS-EXT-SRV-ATTR:host"), spawn_attempts=len(attempts),
        candidates=int(candidates) if isinstance(candidates, int) else None,
        scheduling_seconds=scheduling.get("seconds"), fault=kind,
        message=fault.get("message"), exclusions=exclusions)


def late_exclusions(attempts: Sequence[Mapping[str, Any]],
                    hosts_total: int) -> list[Exclusion]:
    """A build that ran out of hosts: the feature each host refused at spawn."""
    refused: dict[str, set[str]] = {}
    for attempt in attempts:
        if attempt.get("result") == "failed":
            what = attempt.get("feature") or attempt.get("kind") or "spawn failure"
            refused.setdefault(f"refused at spawn: {what}", set()).add(str(attempt["host"]))
    return [Exclusion(constraint, len(hosts), hosts_total)
            for constraint, hosts in sorted(refused.items())]


def exclusions_of(details: Mapping[str, Any], scheduling: Mapping[str, Any],
                  placement: PlacementClient, hosts_total: int) -> list[Exclusion]:
    """Which constraint of a NoValidHost request left no host, and how many of the
    cloud's hosts each excluded on its own: one cheap placement query per required or
    forbidden trait of the request (root providers having it), plus the host filters'
    rejections."""
    found: list[Exclusion] = []
    origins = _trait_origins(scheduling)
    request = details.get("request") or {}
    for trait in _traits(request, "required"):
        having = _hosts_with(placement, trait)
        if having is None:
            continue
        excluded = hosts_total - having
        if excluded > 0:
            found.append(Exclusion(_describe("required trait", trait, origins), excluded,
                                   hosts_total))
    for trait in _traits(request, "forbidden"):
        having = _hosts_with(placement, trait)
        if having:
            found.append(Exclusion(_describe("forbidden trait", trait, origins), having,
                                   hosts_total))
    rejections = details.get("rejections") or []
    by_filter: dict[str, int] = {}
    for rejection in rejections:
        if isinstance(rejection, Mapping):
            name = str(rejection.get("filter") or rejection.get("by") or "host filter")
            by_filter[name] = by_filter.get(name, 0) + 1
    for name, count in sorted(by_filter.items()):
        found.append(Exclusion(f"host filter {name}", count, hosts_total))
    if not found:
        found.append(Exclusion("resources (no host has room)", hosts_total, hosts_total))
    return found


def _traits(request: Mapping[str, Any], kind: str) -> list[str]:
    """The request's traits of one kind, wherever the scheduler's details put them."""
    names: set[str] = set()
    for key, value in request.items():
        if kind not in key:
            continue
        if isinstance(value, str):
            names.update(t for t in value.split(",") if t)
        elif isinstance(value, list | tuple | set):
            names.update(str(t) for t in value)
    return sorted(n.lstrip("!") for n in names)


def _trait_origins(scheduling: Mapping[str, Any]) -> dict[str, str]:
    """trait -> what asked for it, from the request filters' records
    ("root_required:COMPUTE_NET_VIF_MODEL_E1000 (hw_vif_model=e1000)")."""
    origins: dict[str, str] = {}
    for record in scheduling.get("filters", []):
        for added in record.get("added", []):
            match = re.match(r"^root_(?:required|forbidden):([A-Z0-9_]+)(?: \((.*)\))?$",
                             str(added))
            if match:
                origins[match.group(1)] = match.group(2) or record.get("name", "")
    return origins


def _describe(kind: str, trait: str, origins: Mapping[str, str]) -> str:
    origin = origins.get(trait)
    return f"{kind} {trait}" + (f" ({origin})" if origin else "")


def _compute_nodes(placement: PlacementClient) -> int:
    body = placement.request("GET", "/resource_providers",
                             params=[("required", "COMPUTE_NODE")])
    return len(body.get("resource_providers", []))


def _hosts_with(placement: PlacementClient, trait: str) -> int | None:
    """Compute hosts (root providers) having ``trait``; None if placement cannot say."""
    try:
        body = placement.request("GET", "/resource_providers",
                                 params=[("required", trait)])
    except PlacementError:
        return None
    return sum(1 for p in body.get("resource_providers", [])
               if p.get("root_provider_uuid") in (None, p.get("uuid")))
