"""ApiState: what every handler reaches through ``req.state``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from oslo_config import cfg

from moorage.api.capabilities.census import CensusCache
from moorage.api.catalog import ApiCatalog
from moorage.api.lookups import Definitions
from moorage.api.policy import Policy
from moorage.compute.client import AgentClient
from moorage.metrics import HttpMetrics
from moorage.placement.client import PlacementClient
from moorage.placement.storage.database import Database


@dataclass
class ApiState:
    """The configuration, database, clients and workers one compute API process serves from.

    ``agents``, ``scheduler`` and ``conductor`` may be None until the process that
    assembles the service sets them (the conductor is ``moorage.conductor.Conductor``,
    the scheduler ``moorage.scheduler.Scheduler``); handlers that need them answer 503
    while they are missing.
    """

    conf: cfg.ConfigOpts
    database: Database
    placement: PlacementClient
    policy: Policy
    catalog: ApiCatalog
    definitions: Definitions
    agents: AgentClient | None = None
    scheduler: Any = None
    conductor: Any = None
    metrics: HttpMetrics = field(default_factory=HttpMetrics)
    # GET /v2.1/capabilities: the last census of the hosts, for a few seconds.
    capabilities: CensusCache = field(default_factory=CensusCache)

    @property
    def service_token(self) -> str | None:
        token = self.conf.service_token
        return str(token) if token else None
