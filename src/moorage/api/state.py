"""ApiState: what every handler reaches through ``req.state``."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Protocol

from oslo_config import cfg

from moorage.api.capabilities.census import CensusCache
from moorage.api.catalog import ApiCatalog
from moorage.api.glance_images import GlanceImages
from moorage.api.lookups import Definitions
from moorage.api.policy import Policy
from moorage.compute.client import AgentClient
from moorage.db.database import Database
from moorage.lifecycle.group_commit import GroupCommit
from moorage.lifecycle.operations import Operation
from moorage.lifecycle.records import ServerRecord
from moorage.metrics import HttpMetrics
from moorage.placement.client import PlacementClient
from moorage.scheduler.host_traits import HostTraitsReader
from moorage.scheduler.manager import Scheduler

# How long the image admission trusts the hosts' traits it read: creating many images
# costs placement nothing more, and a host's new traits count within seconds.
HOST_TRAITS_MAX_AGE = 10.0


class Dispatcher(Protocol):
    """What the compute API needs of the conductor in its process (``moorage.stack``
    attaches one): its identity (the operations the API accepts are claimed for it in
    the accepting transaction), its group committer (new servers are committed with
    its transitions) and a way to hand accepted work over."""

    @property
    def identity(self) -> str: ...

    @property
    def committer(self) -> GroupCommit | None: ...

    def dispatch(self, operation: Operation, record: ServerRecord | None = None) -> None: ...

    def stop(self) -> None: ...


@dataclass
class ApiState:
    """The configuration, database, clients and workers one compute API process serves from.

    ``agents``, ``scheduler`` and ``conductor`` may be None until the process that
    assembles the service sets them (``moorage.stack``); handlers that need them answer
    503 while they are missing.
    """

    conf: cfg.ConfigOpts
    database: Database
    placement: PlacementClient
    policy: Policy
    catalog: ApiCatalog
    definitions: Definitions
    agents: AgentClient | None = None
    scheduler: Scheduler | None = None
    conductor: Dispatcher | None = None
    # Where boots read their images when an existing Glance holds them
    # ([api] image_service = glance); None: this API's own image service.
    glance: GlanceImages | None = None
    metrics: HttpMetrics = field(default_factory=HttpMetrics)
    # GET /v2.1/capabilities: the last census of the hosts, for a few seconds.
    capabilities: CensusCache = field(default_factory=CensusCache)
    _host_traits: HostTraitsReader | None = field(default=None, init=False, repr=False)
    _host_traits_lock: threading.Lock = field(default_factory=threading.Lock, init=False,
                                              repr=False)

    def host_traits(self) -> HostTraitsReader:
        """The compute hosts' traits as the image admission reads them (made on first
        use, kept ``HOST_TRAITS_MAX_AGE`` seconds)."""
        with self._host_traits_lock:
            if self._host_traits is None:
                self._host_traits = HostTraitsReader(self.placement,
                                                     max_age=HOST_TRAITS_MAX_AGE)
            return self._host_traits

    @property
    def service_token(self) -> str | None:
        token = self.conf.service_token
        return str(token) if token else None
