"""Compute services: one row per host, written by its agent's heartbeat and by the
operator (enable, disable, force down), and the nodes each reports (``compute_nodes``)."""

from __future__ import annotations

import datetime
import json
import uuid as uuidlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from moorage.api.errors import NotFound
from moorage.api.storage import catalog_state, compute_nodes
from moorage.api.storage.schema import services
from moorage.db.clock import utcnow


@dataclass(frozen=True)
class Heartbeat:
    """What an agent says about itself on every heartbeat (PUT /internal/services/{host})."""

    host: str
    binary: str
    driver: str
    nodes: Sequence[str]
    agent_url: str | None
    supported_instances: Sequence[tuple[str, str, str]] = ()
    hypervisor_version: int | None = None
    version: str | None = None
    # node -> the traits its driver reports unsupported (compute.agent.refused).
    refused: Mapping[str, Sequence[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class ServiceRecord:
    id: int
    uuid: str
    host: str
    binary: str
    driver: str
    nodes: list[str]
    agent_url: str | None
    supported_instances: list[tuple[str, str, str]] = field(default_factory=list)
    hypervisor_version: int | None = None
    version: str | None = None
    refused: dict[str, list[str]] = field(default_factory=dict)
    disabled: bool = False
    disabled_reason: str | None = None
    forced_down: bool = False
    created_at: datetime.datetime | None = None
    updated_at: datetime.datetime | None = None  # the last heartbeat

    def is_up(self, down_after: float, now: datetime.datetime | None = None) -> bool:
        """Heart-beat within ``down_after`` seconds and not forced down (nova's rule)."""
        if self.forced_down or self.updated_at is None:
            return False
        elapsed = ((now or utcnow()) - self.updated_at).total_seconds()
        return elapsed <= down_after


def _record(row: sa.Row[tuple[object, ...]]) -> ServiceRecord:
    m = row._mapping
    return ServiceRecord(
        id=m["id"], uuid=m["uuid"], host=m["host"], binary=m["binary"], driver=m["driver"],
        nodes=list(json.loads(m["nodes"])), agent_url=m["agent_url"],
        supported_instances=[(str(a), str(h), str(v)) for a, h, v
                             in json.loads(m["supported_instances"])],
        hypervisor_version=m["hypervisor_version"], version=m["version"],
        refused={str(n): [str(t) for t in ts] for n, ts in json.loads(m["refused"]).items()},
        disabled=bool(m["disabled"]), disabled_reason=m["disabled_reason"],
        forced_down=bool(m["forced_down"]), created_at=m["created_at"],
        updated_at=m["updated_at"],
    )


@dataclass(frozen=True)
class OperatorState:
    """What a heartbeat's answer tells an agent: the operator's fields of its service."""

    id: int
    host: str
    disabled: bool
    disabled_reason: str | None
    forced_down: bool


def _reported(beat: Heartbeat) -> dict[str, object]:
    return {
        "binary": beat.binary, "driver": beat.driver, "nodes": json.dumps(list(beat.nodes)),
        "agent_url": beat.agent_url,
        "supported_instances": json.dumps([list(t) for t in beat.supported_instances]),
        "hypervisor_version": beat.hypervisor_version, "version": beat.version,
        "refused": refused_json(beat.refused),
    }


def refused_json(refused: Mapping[str, Sequence[str]]) -> str:
    """The ``refused`` column: nodes and traits sorted, so that an unchanged report
    compares equal to the row."""
    return json.dumps({node: sorted(set(traits)) for node, traits in sorted(refused.items())})


def _chunks(items: Sequence[str], size: int = 500) -> list[list[str]]:
    return [list(items[i:i + size]) for i in range(0, len(items), size)]


def record_heartbeats(conn: Connection, beats: Sequence[Heartbeat]
                      ) -> dict[str, OperatorState]:
    """Create each host's service or refresh what its agent reports; updated_at = now.

    The operator's fields (disabled, disabled_reason, forced_down) are left alone. A
    beat that reports what the row already says only refreshes ``updated_at`` (one
    statement for all such hosts); a new service or a changed report is stamped with
    a new catalog version, so the schedulers' catalogs pick it up, and its nodes are
    recorded (``compute_nodes.sync_nodes``). A new service gets a uuid of its own."""
    now = utcnow()
    reports = {beat.host: _reported(beat) for beat in beats}
    columns = [services.c[name] for name in ("host", *next(iter(reports.values()), {}))]
    existing: dict[str, dict[str, object]] = {}
    for chunk in _chunks(list(reports)):
        for row in conn.execute(sa.select(*columns).where(services.c.host.in_(chunk))):
            existing[row[0]] = dict(row._mapping)
    fresh = [host for host in reports if host not in existing]
    changed = [host for host, report in reports.items() if host in existing
               and any(existing[host][k] != v for k, v in report.items())]
    alive = [host for host in reports if host in existing and host not in changed]
    if fresh or changed:
        stamp = catalog_state.bump(conn)
        if fresh:
            conn.execute(services.insert(), [
                {"uuid": str(uuidlib.uuid4()), "host": host, "disabled": False,
                 "forced_down": False, "created_at": now, "updated_at": now,
                 "change_version": stamp, **reports[host]}
                for host in fresh])
        for host in changed:
            conn.execute(services.update().where(services.c.host == host).values(
                updated_at=now, change_version=stamp, **reports[host]))
    for chunk in _chunks(alive):
        # UPDATE services SET updated_at = :now WHERE host IN (...)
        conn.execute(services.update().where(services.c.host.in_(chunk))
                     .values(updated_at=now))
    states: dict[str, OperatorState] = {}
    for chunk in _chunks(list(reports)):
        for row in conn.execute(
                sa.select(services.c.id, services.c.host, services.c.disabled,
                          services.c.disabled_reason, services.c.forced_down)
                .where(services.c.host.in_(chunk))):
            states[row.host] = OperatorState(int(row.id), row.host, bool(row.disabled),
                                             row.disabled_reason, bool(row.forced_down))
    nodes = {beat.host: beat.nodes for beat in beats}
    compute_nodes.sync_nodes(conn, {states[host].id: nodes[host] for host in fresh + changed})
    return states


def touch_services(conn: Connection, hosts: Sequence[str]) -> set[str]:
    """A heartbeat that reports nothing new: updated_at = now. The hosts among
    ``hosts`` that have no service (forgotten: they must report in full)."""
    now = utcnow()
    unknown: set[str] = set()
    for chunk in _chunks(list(hosts)):
        # UPDATE services SET updated_at = :now WHERE host IN (...)
        touched = conn.execute(services.update().where(services.c.host.in_(chunk))
                               .values(updated_at=now)).rowcount
        if touched != len(set(chunk)):
            found = set(conn.execute(sa.select(services.c.host)
                                     .where(services.c.host.in_(chunk))).scalars())
            unknown.update(set(chunk) - found)
    return unknown


def operator_states(conn: Connection, hosts: Sequence[str] | None = None
                    ) -> dict[str, OperatorState]:
    """The services an operator disabled or forced down (of ``hosts``, when given):
    every other service is enabled and up as far as the operator is concerned."""
    # SELECT id, host, disabled, disabled_reason, forced_down FROM services
    # WHERE disabled OR forced_down
    rows = conn.execute(sa.select(services.c.id, services.c.host, services.c.disabled,
                                  services.c.disabled_reason, services.c.forced_down)
                        .where(sa.or_(services.c.disabled, services.c.forced_down)))
    wanted = set(hosts) if hosts is not None else None
    return {row.host: OperatorState(int(row.id), row.host, bool(row.disabled),
                                    row.disabled_reason, bool(row.forced_down))
            for row in rows if wanted is None or row.host in wanted}


def record_heartbeat(conn: Connection, beat: Heartbeat) -> ServiceRecord:
    """One host's heartbeat (``record_heartbeats``); its service as it is now."""
    record_heartbeats(conn, [beat])
    return load_service_by_host(conn, beat.host)


def list_services(conn: Connection, *, host: str | None = None,
                  binary: str | None = None) -> list[ServiceRecord]:
    statement = sa.select(services).order_by(services.c.id)
    if host is not None:
        statement = statement.where(services.c.host == host)
    if binary is not None:
        statement = statement.where(services.c.binary == binary)
    return [_record(row) for row in conn.execute(statement)]


def find_service_by_host(conn: Connection, host: str) -> ServiceRecord | None:
    row = conn.execute(sa.select(services).where(services.c.host == host)).first()
    return _record(row) if row is not None else None


def load_service_by_host(conn: Connection, host: str) -> ServiceRecord:
    found = find_service_by_host(conn, host)
    if found is None:
        raise NotFound(f"Compute host {host} could not be found.")
    return found


def load_service(conn: Connection, service_id: int) -> ServiceRecord:
    row = conn.execute(sa.select(services).where(services.c.id == service_id)).first()
    if row is None:
        raise NotFound(f"Service {service_id} could not be found.")
    return _record(row)


def load_service_by_uuid(conn: Connection, service_uuid: str) -> ServiceRecord:
    """The service named ``service_uuid`` (in its canonical, lower-case spelling)."""
    row = conn.execute(sa.select(services).where(services.c.uuid == service_uuid)).first()
    if row is None:
        raise NotFound(f"Service {service_uuid} could not be found.")
    return _record(row)


def find_service_by_host_and_binary(conn: Connection, host: str, binary: str
                                    ) -> ServiceRecord | None:
    """How compute API versions before 2.53 name a service: its host and binary."""
    row = conn.execute(sa.select(services).where(services.c.host == host,
                                                 services.c.binary == binary)).first()
    return _record(row) if row is not None else None


@dataclass(frozen=True)
class OperatorChange:
    """What an operator changes of a service; None leaves a field as it is. The reason
    goes with the status: enabling clears it, disabling sets it (or clears it)."""

    disabled: bool | None = None
    disabled_reason: str | None = None
    forced_down: bool | None = None

    @property
    def empty(self) -> bool:
        return self.disabled is None and self.forced_down is None


def update_service(conn: Connection, service_id: int, change: OperatorChange
                   ) -> ServiceRecord:
    """Change the operator's fields (disabled, disabled_reason, forced_down)."""
    values: dict[str, object] = {}
    if change.disabled is not None:
        values["disabled"] = change.disabled
        values["disabled_reason"] = change.disabled_reason if change.disabled else None
    if change.forced_down is not None:
        values["forced_down"] = change.forced_down
    if values:
        stamp = catalog_state.bump(conn)
        # UPDATE services SET change_version = :stamp, <the changed fields> WHERE id = :id
        conn.execute(services.update().where(services.c.id == service_id)
                     .values(change_version=stamp, **values))
    return load_service(conn, service_id)


def delete_service(conn: Connection, service_id: int) -> None:
    if not conn.execute(services.delete().where(services.c.id == service_id)).rowcount:
        raise NotFound(f"Service {service_id} could not be found.")
    compute_nodes.delete_nodes(conn, service_id)
    catalog_state.bump(conn, reset=True)
