"""Compute services: one row per host, written by its agent's heartbeat and by the
operator (enable, disable, force down)."""

from __future__ import annotations

import datetime
import json
from collections.abc import Sequence
from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from moorage.api.errors import NotFound
from moorage.api.storage.schema import services
from moorage.placement.storage.database import utcnow


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


@dataclass(frozen=True)
class ServiceRecord:
    id: int
    host: str
    binary: str
    driver: str
    nodes: list[str]
    agent_url: str | None
    supported_instances: list[tuple[str, str, str]] = field(default_factory=list)
    hypervisor_version: int | None = None
    version: str | None = None
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
        id=m["id"], host=m["host"], binary=m["binary"], driver=m["driver"],
        nodes=list(json.loads(m["nodes"])), agent_url=m["agent_url"],
        supported_instances=[(str(a), str(h), str(v)) for a, h, v
                             in json.loads(m["supported_instances"])],
        hypervisor_version=m["hypervisor_version"], version=m["version"],
        disabled=bool(m["disabled"]), disabled_reason=m["disabled_reason"],
        forced_down=bool(m["forced_down"]), created_at=m["created_at"],
        updated_at=m["updated_at"],
    )


def record_heartbeat(conn: Connection, beat: Heartbeat) -> ServiceRecord:
    """Create the host's service, or refresh what its agent reports; updated_at = now.

    The operator's fields (disabled, disabled_reason, forced_down) are left alone."""
    now = utcnow()
    reported = {
        "binary": beat.binary, "driver": beat.driver, "nodes": json.dumps(list(beat.nodes)),
        "agent_url": beat.agent_url,
        "supported_instances": json.dumps([list(t) for t in beat.supported_instances]),
        "hypervisor_version": beat.hypervisor_version, "version": beat.version,
        "updated_at": now,
    }
    updated = conn.execute(services.update().where(services.c.host == beat.host)
                           .values(**reported)).rowcount
    if not updated:
        conn.execute(services.insert().values(host=beat.host, disabled=False, forced_down=False,
                                              created_at=now, **reported))
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


def update_service(conn: Connection, service_id: int, **changes: object) -> ServiceRecord:
    """Change the operator's fields: disabled, disabled_reason, forced_down."""
    allowed = {"disabled", "disabled_reason", "forced_down"}
    unknown = set(changes) - allowed
    if unknown:
        raise ValueError(f"not an operator's field: {sorted(unknown)}")
    if changes:
        conn.execute(services.update().where(services.c.id == service_id).values(**changes))
    return load_service(conn, service_id)


def delete_service(conn: Connection, service_id: int) -> None:
    if not conn.execute(services.delete().where(services.c.id == service_id)).rowcount:
        raise NotFound(f"Service {service_id} could not be found.")
