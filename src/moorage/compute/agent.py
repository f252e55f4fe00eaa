"""ComputeAgent: one host's resource providers in placement, kept true to its driver.

On start and then every ``[DEFAULT] update_resources_interval`` seconds it asks
its driver what the host has and can do and writes it to placement
(provider_tree.py). When the hypervisor cannot be reached it reports nothing:
stale but true is better than fresh and wrong, and the reason is logged and
kept in ``status``.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

from oslo_config import cfg

from moorage.compute.client import Fence
from moorage.compute.provider_tree import ProviderChange, ProviderTreeSync
from moorage.compute.traits import refused
from moorage.placement.client import PlacementClient, PlacementError
from moorage.virt.driver import ComputeDriver, HypervisorUnavailable

LOG = logging.getLogger(__name__)


@dataclass
class SyncResult:
    """One sync: what changed, or why nothing could be reported."""

    changes: list[ProviderChange] = field(default_factory=list)
    problem: str | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None


class GuestFences:
    """The newest ``Fence`` each guest has seen: a call carrying an older one is
    refused. Kept in memory (a restarted agent starts afresh: its first call of each
    guest sets the mark again), one small entry per guest ever called about."""

    def __init__(self) -> None:
        self._newest: dict[str, Fence] = {}
        self._lock = threading.Lock()

    def admit(self, instance_uuid: str, fence: Fence | None) -> bool:
        """May a call about ``instance_uuid`` with ``fence`` go on? It becomes the mark
        when it is the newest."""
        if fence is None:
            return True
        with self._lock:
            newest = self._newest.get(instance_uuid)
            if newest is not None and fence < newest:
                return False
            self._newest[instance_uuid] = fence
            return True


class ComputeAgent:
    """The compute service of one host.

    ``disabled`` None: the service's state is not known yet (it is the compute API's
    record, told by the first heartbeat's answer). Until then the syncs leave
    COMPUTE_STATUS_DISABLED as placement has it, so a disabled host restarting is not
    offered to the scheduler between its first sync and its first heartbeat."""

    def __init__(self, conf: cfg.ConfigOpts, driver: ComputeDriver,
                 placement: PlacementClient, *, disabled: bool | None = False,
                 host: str | None = None, tree_sync: ProviderTreeSync | None = None) -> None:
        self.conf = conf
        # A fleet's hosts share their group's configuration: the host is named apart.
        self.host: str = host or str(conf.host)
        self.driver = driver
        self.placement = placement
        self.tree_sync = tree_sync or ProviderTreeSync(
            placement, refresh_seconds=float(conf.compute.resource_provider_association_refresh))
        self._disabled = disabled
        self._connected = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.last: SyncResult | None = None
        self.fences = GuestFences()
        # node -> what its driver last reported unsupported (traits.refused), for the
        # heartbeat; kept while the hypervisor is unreachable.
        self.refused: dict[str, list[str]] = {}

    # -- state -------------------------------------------------------------------
    @property
    def disabled(self) -> bool | None:
        return self._disabled

    def set_disabled(self, disabled: bool) -> SyncResult:
        """Disable (or enable) the service: COMPUTE_STATUS_DISABLED follows at once."""
        self._disabled = disabled
        return self.sync()

    def learn_disabled(self, disabled: bool) -> None:
        """Take the compute API's record of the disabled state (the first heartbeat's
        answer): synced at once only where placement does not show it already, as
        this agent's last sync found it (a fleet learns it for every host at once)."""
        nodes = list(self.refused)
        if nodes and all(self.tree_sync.shows_disabled(node) is disabled for node in nodes):
            self._disabled = disabled
        else:
            self.set_disabled(disabled)

    # -- syncing -----------------------------------------------------------------
    def connect(self) -> None:
        """init_host once; HypervisorUnavailable propagates (and is retried next sync)."""
        if not self._connected:
            self.driver.init_host()
            self._connected = True

    def sync(self) -> SyncResult:
        """Write every node's providers to placement, now."""
        with self._lock:
            result = self._sync()
            self.last = result
            return result

    def _sync(self) -> SyncResult:
        try:
            self.connect()
            nodes = {node: (self.driver.provider_tree(node), self.driver.trait_reports(node))
                     for node in self.driver.nodes()}
        except HypervisorUnavailable as exc:
            LOG.error("%s hypervisor unavailable, reporting nothing: %s", self.driver.name, exc)
            self._connected = False
            return SyncResult(problem=f"hypervisor unavailable: {exc}")
        self.refused = {node: refused(reports) for node, (_, reports) in nodes.items()}
        result = SyncResult()
        for node, (tree, reports) in nodes.items():
            try:
                result.changes.extend(
                    self.tree_sync.sync(tree, reports, disabled=self._disabled))
            except PlacementError as exc:
                LOG.error("node %s: placement sync failed: %s", node, exc)
                result.problem = f"placement: {exc}"
        for change in result.changes:
            # A periodic sync that found placement right says so at DEBUG: a cloud's
            # agents sync every minute, and a fleet syncs all its hosts at once.
            LOG.log(logging.INFO if change.changed else logging.DEBUG, "%s", change.summary())
        return result

    # -- running ---------------------------------------------------------------------
    def run(self) -> None:
        """Sync now and then periodically, until ``stop()``."""
        interval = self.conf.update_resources_interval
        while True:
            self.sync()
            if self._stop.wait(interval):
                return

    def stop(self) -> None:
        self._stop.set()
