"""Two ways to load the workload's providers into a placement service.

``load_over_http`` creates each provider with three API calls (POST the provider, PUT
its inventories, PUT its traits) from a thread pool: the honest setup rate of a
service, and the only way into upstream placement. ``load_in_bulk`` writes the same
rows straight into Moorage's database before the server starts, for sizes where the
API route would take too long; it goes through ``Database.writer()`` so the providers
are stamped with a change version like any write and the server's index loads them.
"""

from __future__ import annotations

import http.client
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from http_client import PlacementClient, Reply
from moorage.placement.storage import bulk, migration
from moorage.placement.storage.database import Database
from moorage.placement.storage.records import Inventory
from workload import INVENTORY, ProviderSpec, inventory_record


@dataclass(frozen=True)
class LoadResult:
    """How the providers got there, and how long it took."""

    loader: str  # "http" or "bulk"
    providers: int
    seconds: float
    threads: int = 1
    requests: int = 0

    @property
    def rate(self) -> float:
        """Providers per second."""
        return self.providers / self.seconds if self.seconds > 0 else float("inf")

    def describe(self) -> str:
        if self.loader == "http":
            return f"http ({self.threads} threads, {self.requests} requests)"
        return "bulk (SQL, before start)"


class LoadError(RuntimeError):
    """A loading call got an unexpected answer; the service cannot take the workload."""


def _expect(reply: Reply, status: int, what: str) -> Reply:
    if reply.status != status:
        raise LoadError(f"{what}: {reply.problem()}")
    return reply


def create_provider(client: PlacementClient, spec: ProviderSpec) -> None:
    """POST the provider, PUT its inventories, PUT its traits (microversion 1.39)."""
    try:
        _create_provider(client, spec)
    except (OSError, http.client.HTTPException) as exc:
        raise LoadError(f"connection failed: {exc!r}") from exc


def _create_provider(client: PlacementClient, spec: ProviderSpec) -> None:
    _expect(client.post("/resource_providers", {"uuid": spec.uuid, "name": spec.name}), 200,
            "POST /resource_providers")
    inventories = {rc: inventory_record(total) for rc, total in INVENTORY.items()}
    reply = _expect(
        client.put(f"/resource_providers/{spec.uuid}/inventories",
                   {"resource_provider_generation": 0, "inventories": inventories}),
        200, "PUT /resource_providers/{uuid}/inventories",
    )
    generation = reply.json()["resource_provider_generation"]
    _expect(
        client.put(f"/resource_providers/{spec.uuid}/traits",
                   {"resource_provider_generation": generation, "traits": sorted(spec.traits)}),
        200, "PUT /resource_providers/{uuid}/traits",
    )


def load_over_http(url: str, specs: Sequence[ProviderSpec], threads: int) -> LoadResult:
    """Create every provider through the API; the first failure stops the load.

    The first provider is created alone, so a service that cannot take the workload
    fails fast with one provider half-made rather than ``threads`` of them.
    """
    start = time.perf_counter()
    if specs:
        probe = PlacementClient(url)
        try:
            create_provider(probe, specs[0])
        finally:
            probe.close()
    local = threading.local()
    clients: list[PlacementClient] = []
    clients_lock = threading.Lock()

    def client() -> PlacementClient:
        found: PlacementClient | None = getattr(local, "client", None)
        if found is None:
            found = local.client = PlacementClient(url)
            with clients_lock:
                clients.append(found)
        return found

    try:
        with ThreadPoolExecutor(max_workers=threads) as pool:
            for _ in pool.map(lambda spec: create_provider(client(), spec), specs[1:]):
                pass
    finally:
        for c in clients:
            c.close()
    return LoadResult("http", len(specs), time.perf_counter() - start, threads, 3 * len(specs))


def load_in_bulk(database_url: str, specs: Sequence[ProviderSpec]) -> LoadResult:
    """Migrate the database and insert every provider, inventory and trait in one transaction.

    The rows are what the HTTP loader leaves behind: root providers at generation 2
    (one inventory write, one traits write), inventories with max_unit = total.
    """
    start = time.perf_counter()
    db = Database(database_url, sqlite_synchronous=False)
    try:
        migration.upgrade(db)
        bulk.load(db, [
            bulk.ProviderSpec(
                name=s.name, uuid=s.uuid, traits=s.traits, generation=2,
                inventories={rc: Inventory(**inventory_record(total))  # type: ignore[arg-type]
                             for rc, total in INVENTORY.items()},
            )
            for s in specs
        ])
    finally:
        db.dispose()
    return LoadResult("bulk", len(specs), time.perf_counter() - start)
