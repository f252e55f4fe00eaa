"""Play a cloud's workload under each scheduling configuration, with the real services.

For every configuration the player opens a fresh scene on the run's stage
(``stage.py``: placement on a fresh copy of the registered hosts, the compute API
with its conductor and scheduler, the hosts' agents), creates the flavors and images
through the compute API, boots the workload exactly as a user would (one server at a
time, so that the same seed plays the same run, or ``concurrency`` at a time), and
reads back from each server what happened: where it went, how many spawns it took,
how many candidates placement offered, how long scheduling took, and, for a failure,
which constraint left no host. Nothing is estimated: every figure comes from the
services.
"""

from __future__ import annotations

import functools
import logging
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from moorage.api.client import ComputeApiClient
from moorage.compute.fleet import FLEET_DRIVERS, FleetHost
from moorage.compute.launcher import agent_config
from moorage.embedded import HostPlan
from moorage.lifecycle import machine
from moorage.placement.client import PlacementClient
from moorage.run.results import (
    BootResult,
    Configuration,
    ConfigurationResult,
    Exclusion,
    Refusal,
)
from moorage.run.stage import Stage
from moorage.run.watcher import ServerWatcher
from moorage.virt.loader import load_driver

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

Progress = Callable[[str, int, int], None]


class PlayError(RuntimeError):
    """The run could not be played (a service failed to start, an API refused the
    cloud's catalogue)."""


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def stage_of(plans: Sequence[HostPlan], workdir: Path,
             fleet_hosts: Sequence[FleetHost] = (), *, api_workers: int = 0) -> Stage:
    """A stage for ``plans``: hosts of the simulated drivers join ``fleet_hosts`` in the
    fleet (each with its own configuration), the others run as agents of their own."""
    fleet = list(fleet_hosts)
    agents = []
    for plan in plans:
        if plan.driver in FLEET_DRIVERS:
            conf = agent_config(plan.name, plan.driver, overrides=plan.overrides())
            fleet.append(FleetHost(plan.name, conf, functools.partial(load_driver, conf)))
        else:
            agents.append(plan)
    return Stage(workdir, fleet, agents, api_workers=api_workers)


def play(configuration: Configuration, plans: Sequence[HostPlan],
         flavors: Sequence[Mapping[str, Any]], images: Sequence[Mapping[str, Any]],
         boots: Sequence[tuple[str, str]], workdir: Path, *,
         progress: Progress | None = None, boot_timeout: float = 120.0,
         concurrency: int = 1) -> ConfigurationResult:
    """Boot ``boots`` ((image name, flavor name) pairs, in order) on a fresh cloud of
    ``plans`` scheduled as ``configuration`` says."""
    stage = stage_of(plans, workdir / _slug(configuration.name)).start()
    try:
        return play_on(stage, configuration, flavors, images, boots, progress=progress,
                       boot_timeout=boot_timeout, concurrency=concurrency)
    finally:
        stage.stop()


def play_on(stage: Stage, configuration: Configuration,
            flavors: Sequence[Mapping[str, Any]], images: Sequence[Mapping[str, Any]],
            boots: Sequence[tuple[str, str]], *, progress: Progress | None = None,
            boot_timeout: float = 120.0, concurrency: int = 1) -> ConfigurationResult:
    """Play one configuration on ``stage`` (started): fresh placement and compute API,
    the workload booted through the API ``concurrency`` servers at a time."""
    result = ConfigurationResult(configuration, concurrency=concurrency)
    started = time.perf_counter()
    try:
        scene = stage.open(_slug(configuration.name), configuration.options)
    except Exception as exc:
        raise PlayError(f"the cloud of configuration {configuration.name!r} did not "
                        f"start: {exc}") from exc
    try:
        api = ComputeApiClient(scene.api_url, "admin")
        census = Census(PlacementClient(scene.stage.placement_url, "admin"))
        flavor_ids = {f["name"]: str(api.create_flavor(
            f["name"], int(f["ram"]), int(f["vcpus"]), int(f.get("disk", 0)),
            extra_specs=f.get("extra_specs") or None)["id"]) for f in flavors}
        image_ids = {i["name"]: str(api.create_image(
            i["name"], disk_format=i.get("disk_format"),
            container_format=i.get("container_format", "bare"),
            properties=i.get("properties") or None)["id"]) for i in images}
        booting = time.perf_counter()
        servers = _boot_all(api, scene.api_url, configuration.name, boots, flavor_ids,
                            image_ids, concurrency, boot_timeout, progress)
        result.boots_seconds = time.perf_counter() - booting
        for index, (image, flavor) in enumerate(boots):
            result.boots.append(_result(index, image, flavor, servers[index], census))
        _clear_guests(stage, result)
    finally:
        scene.stop()
    result.wall_seconds = time.perf_counter() - started
    return result


def _boot_all(api: ComputeApiClient, api_url: str, name: str,
              boots: Sequence[tuple[str, str]], flavor_ids: Mapping[str, str],
              image_ids: Mapping[str, str], concurrency: int, timeout: float,
              progress: Progress | None) -> list[dict[str, Any]]:
    """Every boot's server once at rest, by index. One at a time (concurrency 1: the
    same order every time) or ``concurrency`` at a time, watched together."""
    total = len(boots)
    if progress is not None:
        progress(name, 0, total)
    if concurrency <= 1:
        found = []
        for index, (image, flavor) in enumerate(boots):
            found.append(_boot(api, f"vm-{index}", flavor_ids[flavor], image_ids[image],
                               timeout))
            if progress is not None:
                progress(name, index + 1, total)
        return found
    # Polled every 50 ms, not 20: a burst keeps the two cores busy, and each poll
    # costs the compute API a query and the run a parse.
    watcher = ServerWatcher(api_url, interval=0.05).start()
    done = [0]
    lock = threading.Lock()
    # A client (and so a kept-alive connection) per thread of the pool.
    clients = threading.local()

    def boot(index: int) -> dict[str, Any]:
        image, flavor = boots[index]
        if not hasattr(clients, "api"):
            clients.api = ComputeApiClient(api_url, "admin")
        uuid = str(clients.api.create_server(f"vm-{index}", flavor_ids[flavor],
                                             image_ids[image])["id"])
        try:
            server = watcher.wait(uuid, timeout)
        except TimeoutError as exc:
            raise PlayError(f"server vm-{index}: {exc}") from None
        if server is None:
            raise PlayError(f"server vm-{index} was deleted while it was built")
        with lock:
            done[0] += 1
            if progress is not None:
                progress(name, done[0], total)
        return server

    try:
        with ThreadPoolExecutor(concurrency, thread_name_prefix="boot") as pool:
            return list(pool.map(boot, range(total)))
    finally:
        watcher.stop()


def _clear_guests(stage: Stage, result: ConfigurationResult) -> None:
    """The next configuration starts with no guest: each is destroyed by its host's
    own driver (the scene's databases are thrown away with their records)."""
    for boot in result.boots:
        if boot.host is None or boot.server_id is None:
            continue
        agent = stage.agent_of(boot.host)
        if agent is not None:
            agent.driver.destroy(boot.server_id)


def _boot(api: ComputeApiClient, name: str, flavor: str, image: str,
          timeout: float) -> dict[str, Any]:
    uuid = str(api.create_server(name, flavor, image)["id"])
    deadline = time.monotonic() + timeout
    while True:
        server = api.server(uuid)
        if machine.at_rest(server["status"], server.get("OS-EXT-STS:task_state")):
            return server
        if time.monotonic() > deadline:
            raise PlayError(f"server {name} still {server['status']} after {timeout:g}s")
        time.sleep(0.005)


class Census:
    """How many compute hosts the cloud has, asked of placement once per
    configuration (the denominator of a spawn refusal's share)."""

    def __init__(self, placement: PlacementClient | None, *,
                 total: int | None = None) -> None:
        self.placement = placement
        self._total = total

    @property
    def total(self) -> int:
        if self._total is None:
            assert self.placement is not None
            self._total = _compute_nodes(self.placement)
        return self._total


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
            census: Census) -> BootResult:
    scheduling = server.get("moorage:scheduling") or {}
    attempts = [a for a in scheduling.get("attempts", [])
                if a.get("result") in ("ok", "failed")]
    kind = _fault_kind(server)
    fault = server.get("fault") or {}
    exclusions: list[Exclusion] = []
    if kind == "NoValidHost":
        exclusions = exclusions_of(fault.get("details") or {}, scheduling, census)
    elif kind is not None:
        exclusions = late_exclusions(attempts, census.total)
    candidates = scheduling.get("candidates")
    if candidates is None and kind == "NoValidHost":
        candidates = (fault.get("details") or {}).get("candidates", 0)
    return BootResult(
        index=index, image=image, flavor=flavor, status=str(server["status"]),
        host=server.get("OS-EXT-SRV-ATTR:host"), spawn_attempts=len(attempts),
        candidates=int(candidates) if isinstance(candidates, int) else None,
        scheduling_seconds=scheduling.get("seconds"), fault=kind,
        message=fault.get("message"), exclusions=exclusions,
        server_id=str(server["id"]) if "id" in server else None,
        refusals=tuple(Refusal(str(a["host"]), str(a.get("feature") or a.get("kind")
                                                    or "spawn failure"))
                       for a in attempts if a.get("result") == "failed"))


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
                  census: Census) -> list[Exclusion]:
    """The constraints of a NoValidHost boot that excluded hosts, with how many of the
    cloud's hosts each excluded on its own, as the scheduler recorded them when it
    decided (its decisions: placement's per-constraint counts, the request, the host
    filters), and what no host had together."""
    decisions = details.get("decisions") or scheduling.get("decisions")
    if not isinstance(decisions, Mapping):
        return [Exclusion("no decisions recorded", census.total, census.total)]
    found = [Exclusion(_constraint(e), int(e["excluded"]), int(e["of"]))
             for e in decisions.get("exclusions") or () if e.get("excluded")]
    together = decisions.get("together")
    if together:
        hosts = int(decisions.get("hosts") or census.total)
        found.append(Exclusion("together: " + " + ".join(together["constraints"]),
                               hosts, hosts))
    if not found:
        found.append(Exclusion("resources (no host has room)", census.total, census.total))
    return found


def _constraint(exclusion: Mapping[str, Any]) -> str:
    """"required host trait COMPUTE_NET_VIF_MODEL_E1000 (image property
    hw_vif_model=e1000)": the constraint and where the request got it."""
    origin = exclusion.get("origin")
    return str(exclusion["constraint"]) + (f" ({origin})" if origin else "")


def _compute_nodes(placement: PlacementClient) -> int:
    body = placement.request("GET", "/resource_providers",
                             params=[("required", "COMPUTE_NODE")])
    return len(body.get("resource_providers", []))
