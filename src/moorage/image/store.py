"""The image service's data layer: ``images``, ``image_tags`` and ``image_members`` rows
in and ``StoredImage`` and ``Member`` values out. No HTTP here.

Who may see what (glance's rules) is decided by ``visible`` (one image) and by the
WHERE clause ``listable`` builds (a list); writers call ``ImageWrites.changed`` in
their transaction, which the compute API sets to bump its definitions version, so
its image cache (``moorage.api.lookups.Definitions``) learns of every change.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from moorage.db.clock import utcnow
from moorage.image.query import ImageQuery
from moorage.image.records import (
    DataDigest,
    ImageStatus,
    Member,
    MemberStatus,
    StoredImage,
    Visibility,
)
from moorage.image.schema import image_members, image_tags, images

# Called in each writing transaction, before it commits.
OnChange = Callable[[Connection], None]


def _no_one(conn: Connection) -> None:
    """Nobody to tell (an image service outside a compute API)."""


def _image(row: sa.Row[tuple[object, ...]], tags: Sequence[str]) -> StoredImage:
    m = row._mapping
    return StoredImage(
        id=m["id"], name=m["name"], status=ImageStatus(m["status"]),
        visibility=Visibility(m["visibility"]), owner=m["owner"],
        disk_format=m["disk_format"], container_format=m["container_format"],
        min_disk=m["min_disk"], min_ram=m["min_ram"], protected=bool(m["protected"]),
        os_hidden=bool(m["os_hidden"]), created_at=m["created_at"],
        updated_at=m["updated_at"], size=m["size"], virtual_size=m["virtual_size"],
        checksum=m["checksum"], os_hash_algo=m["os_hash_algo"],
        os_hash_value=m["os_hash_value"], tags=tuple(sorted(tags)),
        properties=json.loads(m["properties"]))


def _values(image: StoredImage) -> dict[str, object]:
    """The columns an owner's change writes (not the data's, nor the status)."""
    return {
        "name": image.name, "visibility": image.visibility.value, "owner": image.owner,
        "disk_format": image.disk_format, "container_format": image.container_format,
        "min_disk": image.min_disk, "min_ram": image.min_ram, "protected": image.protected,
        "os_hidden": image.os_hidden,
        "properties": json.dumps(dict(image.properties), sort_keys=True),
    }


def _tags_of(conn: Connection, ids: Sequence[str]) -> dict[str, list[str]]:
    # SELECT image_id, value FROM image_tags WHERE image_id IN (...)
    found: dict[str, list[str]] = {i: [] for i in ids}
    if ids:
        rows = conn.execute(sa.select(image_tags.c.image_id, image_tags.c.value)
                            .where(image_tags.c.image_id.in_(list(ids))))
        for image_id, value in rows:
            found[image_id].append(value)
    return found


def load(conn: Connection, image_id: str) -> StoredImage | None:
    """The image with this id, unless deleted."""
    row = conn.execute(sa.select(images).where(images.c.id == image_id,
                                               images.c.deleted == sa.false())).first()
    if row is None:
        return None
    return _image(row, _tags_of(conn, [image_id])[image_id])


def id_taken(conn: Connection, image_id: str) -> bool:
    """Whether an image has, or had, this id (glance never reuses a deleted one's)."""
    return conn.execute(sa.select(images.c.id).where(images.c.id == image_id)
                        ).first() is not None


def member_of(conn: Connection, image_id: str, project_id: str | None) -> Member | None:
    if project_id is None:
        return None
    row = conn.execute(sa.select(image_members).where(
        image_members.c.image_id == image_id, image_members.c.member == project_id)).first()
    return None if row is None else _member(row)


def visible(conn: Connection, image: StoredImage, project_id: str | None,
            is_admin: bool) -> bool:
    """Whether the caller may see ``image``: an admin, its owner, anyone for a public
    or community image, a member (whatever its status) for a shared one."""
    if is_admin or image.visibility in (Visibility.PUBLIC, Visibility.COMMUNITY):
        return True
    if project_id is not None and image.owner == project_id:
        return True
    return (image.visibility is Visibility.SHARED
            and member_of(conn, image.id, project_id) is not None)


@dataclass(frozen=True)
class Listing:
    """Who lists and which visibilities: ``visibility`` None is glance's default
    (public, the caller's own, and shared with it at ``member_status``), "all" adds
    community images."""

    project_id: str | None
    is_admin: bool
    visibility: str | None = None
    member_status: str = MemberStatus.ACCEPTED.value


def listable(listing: Listing) -> sa.ColumnElement[bool]:
    """The WHERE clause of the images ``listing`` may see."""
    clauses: list[sa.ColumnElement[bool]] = [images.c.deleted == sa.false()]
    chosen = listing.visibility
    if chosen not in (None, "all"):
        clauses.append(images.c.visibility == chosen)
    if listing.is_admin:
        return sa.and_(*clauses)
    mine = images.c.owner == listing.project_id
    statuses = (list(MemberStatus) if listing.member_status == "all"
                else [listing.member_status])
    shared_with_me = sa.and_(
        images.c.visibility == Visibility.SHARED.value,
        sa.exists().where(image_members.c.image_id == images.c.id,
                          image_members.c.member == listing.project_id,
                          image_members.c.status.in_(statuses)))
    seen = [images.c.visibility == Visibility.PUBLIC.value, mine, shared_with_me]
    if chosen in ("community", "all"):
        seen.append(images.c.visibility == Visibility.COMMUNITY.value)
    clauses.append(sa.or_(*seen))
    return sa.and_(*clauses)


def select(conn: Connection, where: Iterable[sa.ColumnElement[bool]],
           tags: Sequence[str] = ()) -> list[StoredImage]:
    """The images matching every clause and carrying every tag in ``tags``."""
    query = sa.select(images).where(*where)
    for tag in tags:
        query = query.where(sa.exists().where(image_tags.c.image_id == images.c.id,
                                              image_tags.c.value == tag))
    rows = conn.execute(query).fetchall()
    tags_of = _tags_of(conn, [row._mapping["id"] for row in rows])
    return [_image(row, tags_of[row._mapping["id"]]) for row in rows]


def insert(conn: Connection, image: StoredImage, changed: OnChange = _no_one) -> None:
    conn.execute(images.insert().values(
        id=image.id, status=image.status.value, created_at=image.created_at,
        updated_at=image.updated_at, deleted=False, **_values(image)))
    _write_tags(conn, image.id, image.tags)
    changed(conn)


def _write_tags(conn: Connection, image_id: str, tags: Iterable[str]) -> None:
    conn.execute(image_tags.delete().where(image_tags.c.image_id == image_id))
    rows = [{"image_id": image_id, "value": tag} for tag in sorted(set(tags))]
    if rows:
        conn.execute(image_tags.insert(), rows)


def save(conn: Connection, image: StoredImage, changed: OnChange = _no_one) -> bool:
    """Write an owner's change (attributes, properties, tags); False when the image
    is gone."""
    done = conn.execute(images.update().where(images.c.id == image.id,
                                              images.c.deleted == sa.false())
                        .values(updated_at=utcnow(), **_values(image))).rowcount
    if done:
        _write_tags(conn, image.id, image.tags)
        changed(conn)
    return bool(done)


def move_status(conn: Connection, image_id: str, before: ImageStatus, after: ImageStatus,
                digest: DataDigest | None = None, changed: OnChange = _no_one, *,
                keep_data: bool = False) -> bool:
    """Move the image from ``before`` to ``after`` (with the data's digest, or clearing
    it, or with ``keep_data`` leaving it as it is); False when it was not in ``before``
    any more (another upload, an action, a delete)."""
    # UPDATE images SET status=:after, size=..., ... WHERE id=:id AND status=:before
    #   AND NOT deleted
    values: dict[str, object] = {"status": after.value, "updated_at": utcnow()}
    if not keep_data:
        values.update(size=None, virtual_size=None, checksum=None, os_hash_algo=None,
                      os_hash_value=None)
    if digest is not None:
        values.update(size=digest.size, virtual_size=digest.virtual_size,
                      checksum=digest.checksum, os_hash_algo=digest.os_hash_algo,
                      os_hash_value=digest.os_hash_value)
    done = conn.execute(images.update().where(
        images.c.id == image_id, images.c.status == before.value,
        images.c.deleted == sa.false()).values(**values)).rowcount
    if done:
        changed(conn)
    return bool(done)


def mark_deleted(conn: Connection, image_id: str, changed: OnChange = _no_one) -> bool:
    """Soft-delete: the row stays (its id is never reused), status deleted; its tags and
    members go."""
    now = utcnow()
    done = conn.execute(images.update().where(images.c.id == image_id,
                                              images.c.deleted == sa.false())
                        .values(status=ImageStatus.DELETED.value, deleted=True,
                                deleted_at=now, updated_at=now)).rowcount
    if done:
        for table in (image_tags, image_members):
            conn.execute(table.delete().where(table.c.image_id == image_id))
        changed(conn)
    return bool(done)


# -- members ----------------------------------------------------------------------

def _member(row: sa.Row[tuple[object, ...]]) -> Member:
    m = row._mapping
    return Member(image_id=m["image_id"], member=m["member"],
                  status=MemberStatus(m["status"]), created_at=m["created_at"],
                  updated_at=m["updated_at"])


def members(conn: Connection, image_id: str) -> list[Member]:
    rows = conn.execute(sa.select(image_members).where(image_members.c.image_id == image_id)
                        .order_by(image_members.c.created_at, image_members.c.member))
    return [_member(row) for row in rows]


def add_member(conn: Connection, image_id: str, member: str,
               changed: OnChange = _no_one) -> Member:
    now = utcnow()
    conn.execute(image_members.insert().values(
        image_id=image_id, member=member, status=MemberStatus.PENDING.value,
        created_at=now, updated_at=now))
    changed(conn)
    return Member(image_id, member, MemberStatus.PENDING, now, now)


def set_member_status(conn: Connection, image_id: str, member: str, status: MemberStatus,
                      changed: OnChange = _no_one) -> Member | None:
    conn.execute(image_members.update().where(
        image_members.c.image_id == image_id, image_members.c.member == member)
        .values(status=status.value, updated_at=utcnow()))
    changed(conn)
    return member_of(conn, image_id, member)


def remove_member(conn: Connection, image_id: str, member: str,
                  changed: OnChange = _no_one) -> bool:
    done = conn.execute(image_members.delete().where(
        image_members.c.image_id == image_id, image_members.c.member == member)).rowcount
    if done:
        changed(conn)
    return bool(done)


_TIME_OPERATORS: dict[str, Callable[[sa.Column[object], object], sa.ColumnElement[bool]]] = {
    "gt": lambda c, v: c > v, "gte": lambda c, v: c >= v, "lt": lambda c, v: c < v,
    "lte": lambda c, v: c <= v, "eq": lambda c, v: c == v, "neq": lambda c, v: c != v,
}


def query_clauses(query: ImageQuery) -> list[sa.ColumnElement[bool]]:
    """The WHERE clauses of a list's column filters (visibility aside: ``listable``)."""
    clauses: list[sa.ColumnElement[bool]] = []
    for name, values in query.among.items():
        clauses.append(images.c[name].in_(values))
    for name, wanted in query.booleans.items():
        clauses.append(images.c[name] == wanted)
    if "os_hidden" not in query.booleans:
        clauses.append(images.c.os_hidden == sa.false())
    for time in query.times:
        clauses.append(_TIME_OPERATORS[time.operator](images.c[time.column], time.moment))
    if query.size_min is not None:
        clauses.append(images.c.size >= query.size_min)
    if query.size_max is not None:
        clauses.append(images.c.size <= query.size_max)
    return clauses
