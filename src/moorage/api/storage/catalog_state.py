"""The catalog versions (``catalog_state``): how the schedulers' in-memory catalogs of
hosts and aggregates learn, with one cheap read, that they must catch up.

Writers call :func:`bump` in the transaction that changes a service (other than by a
heartbeat) or an aggregate. The row is updated last and stays locked until commit
(on SQLite writers are serialised anyway), so versions are committed in order and a
reader that has seen version N has seen every change stamped N or lower.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from moorage.api.storage.schema import catalog_state

VERSIONS_SQL = ("SELECT version, aggregates_version, reset_version, definitions_version "
                "FROM catalog_state WHERE id = 1")


@dataclass(frozen=True)
class CatalogVersions:
    """``version``: the newest change; ``aggregates``: the last aggregate change;
    ``reset``: the last deletion of a service; ``definitions``: the last change of a
    flavor or an image."""

    version: int
    aggregates: int
    reset: int
    definitions: int

    @classmethod
    def of(cls, row: tuple[object, ...]) -> CatalogVersions:
        return cls(*(int(v) for v in row))  # type: ignore[call-overload]


def bump(conn: Connection, *, aggregates: bool = False, reset: bool = False,
         definitions: bool = False) -> int:
    """A new catalog version for this transaction's changes; returned to stamp them."""
    values: dict[str, object] = {"version": catalog_state.c.version + 1}
    if aggregates:
        values["aggregates_version"] = catalog_state.c.version + 1
    if reset:
        values["reset_version"] = catalog_state.c.version + 1
    if definitions:
        values["definitions_version"] = catalog_state.c.version + 1
    # UPDATE catalog_state SET version = version + 1 [, ...] WHERE id = 1 RETURNING version
    return int(conn.execute(
        sa.update(catalog_state).where(catalog_state.c.id == 1).values(**values)
        .returning(catalog_state.c.version)).scalar_one())


def read(conn: Connection) -> CatalogVersions:
    return CatalogVersions.of(tuple(conn.exec_driver_sql(VERSIONS_SQL).one()))
