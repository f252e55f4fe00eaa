"""Key pairs: a user's named public keys (``keypairs``), one name per user.

Every read and write names the user: a key pair is found only under its owner's id,
so another user's key pair is "not found", as in nova. Lists are ordered by name,
the key nova's paging (2.35) walks with ``marker``.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from moorage.api.errors import BadRequest, Conflict, NotFound
from moorage.api.key_material import KeypairType
from moorage.api.storage.schema import keypairs
from moorage.db.clock import utcnow
from moorage.db.statements import insert_if_absent


@dataclass(frozen=True)
class KeypairRecord:
    id: int
    user_id: str
    name: str
    type: KeypairType
    fingerprint: str
    public_key: str
    created_at: datetime.datetime


def _record(row: sa.Row[tuple[object, ...]]) -> KeypairRecord:
    m = row._mapping
    return KeypairRecord(id=m["id"], user_id=m["user_id"], name=m["name"],
                         type=KeypairType(m["type"]), fingerprint=m["fingerprint"],
                         public_key=m["public_key"], created_at=m["created_at"])


def _not_found(user_id: str, name: str) -> NotFound:
    return NotFound(f"Keypair {name} not found for user {user_id}")


def create_keypair(conn: Connection, user_id: str, name: str, kind: KeypairType,
                   public_key: str, fingerprint: str) -> KeypairRecord:
    """Store a key pair; Conflict when the user has one of that name (a concurrent
    create of the same name included: the unique key decides)."""
    # INSERT INTO keypairs (...) VALUES (...) ON CONFLICT DO NOTHING RETURNING id
    inserted = insert_if_absent(conn, keypairs, {
        "user_id": user_id, "name": name, "type": str(kind), "fingerprint": fingerprint,
        "public_key": public_key, "created_at": utcnow()})
    if not inserted:
        raise Conflict(f"Key pair '{name}' already exists.")
    return load_keypair(conn, user_id, name)


def find_keypair(conn: Connection, user_id: str, name: str) -> KeypairRecord | None:
    # SELECT * FROM keypairs WHERE user_id = :user_id AND name = :name
    row = conn.execute(sa.select(keypairs).where(
        keypairs.c.user_id == user_id, keypairs.c.name == name)).first()
    return _record(row) if row is not None else None


def load_keypair(conn: Connection, user_id: str, name: str) -> KeypairRecord:
    found = find_keypair(conn, user_id, name)
    if found is None:
        raise _not_found(user_id, name)
    return found


def list_keypairs(conn: Connection, user_id: str, *, limit: int | None = None,
                  marker: str | None = None) -> list[KeypairRecord]:
    """The user's key pairs by name: at most ``limit``, those after ``marker`` (a name
    of theirs; BadRequest as in nova when they have none of that name)."""
    # SELECT * FROM keypairs WHERE user_id = :user_id [AND name > :marker]
    # ORDER BY name [LIMIT :limit]
    statement = sa.select(keypairs).where(keypairs.c.user_id == user_id)
    if marker is not None:
        if find_keypair(conn, user_id, marker) is None:
            raise BadRequest(f"Marker {marker} could not be found.")
        statement = statement.where(keypairs.c.name > marker)
    statement = statement.order_by(keypairs.c.name)
    if limit is not None:
        statement = statement.limit(limit)
    return [_record(row) for row in conn.execute(statement)]


def delete_keypair(conn: Connection, user_id: str, name: str) -> None:
    # DELETE FROM keypairs WHERE user_id = :user_id AND name = :name
    deleted = conn.execute(keypairs.delete().where(
        keypairs.c.user_id == user_id, keypairs.c.name == name)).rowcount
    if not deleted:
        raise _not_found(user_id, name)


def count_keypairs(conn: Connection, user_id: str) -> int:
    """How many key pairs ``user_id`` has (its key_pairs quota counts them)."""
    # SELECT count(*) FROM keypairs WHERE user_id = :user_id
    return int(conn.execute(sa.select(sa.func.count()).select_from(keypairs)
                            .where(keypairs.c.user_id == user_id)).scalar_one())
