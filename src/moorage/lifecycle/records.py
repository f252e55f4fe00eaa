"""ServerRecord and MigrationRecord: a server and a move, as the lifecycle store keeps them."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Annotated

from moorage.db.clock import utcnow, utcnow_precise
from moorage.lifecycle.attributes import ServerAttributes
from moorage.lifecycle.history import Attempt, Fault, SchedulingRecord
from moorage.lifecycle.states import MigrationKind, MigrationStatus, ServerStatus, TaskState
from moorage.model.disclosure import IDENTIFIES_HOST
from moorage.model.flavor import Flavor
from moorage.model.image import Image


@dataclass
class ServerRecord:
    """One server, with what it was built from and what happened to it.

    It holds snapshots of its flavor and image (as nova's instance does), so a flavor
    deleted or an image changed later never changes what a server was built from."""

    uuid: str
    name: str
    project_id: str
    user_id: str
    flavor_id: str
    flavor: Flavor
    image_id: str
    image: Image
    is_bfv: bool = False
    availability_zone: str | None = None
    status: ServerStatus = ServerStatus.BUILD
    task_state: TaskState | None = TaskState.SCHEDULING
    host: Annotated[str | None, IDENTIFIES_HOST] = None
    node: Annotated[str | None, IDENTIFIES_HOST] = None
    # Every host a build tried, and how it went.
    attempts: tuple[Attempt, ...] = ()
    # The last scheduling: request filter records, candidate counts, decisions.
    scheduling: SchedulingRecord | None = None
    # Why the server is in ERROR.
    fault: Fault | None = None
    created_at: datetime.datetime = field(default_factory=utcnow)
    updated_at: datetime.datetime = field(default_factory=utcnow_precise)
    launched_at: datetime.datetime | None = None
    deleted_at: datetime.datetime | None = None
    # A requested target host (admin), kept for the first schedule only.
    requested_host: Annotated[str | None, IDENTIFIES_HOST] = None
    # What the owner said of it (description, metadata, tags, key pair, hints...).
    attributes: ServerAttributes = field(default_factory=ServerAttributes)

    @property
    def deleted(self) -> bool:
        return self.status == ServerStatus.DELETED


@dataclass
class MigrationRecord:
    """A move of a server: cold migration, resize or evacuation.

    Its uuid is also the placement consumer that holds the source host's allocations
    while the move is in flight, as nova does."""

    uuid: str
    server_uuid: str
    kind: MigrationKind
    source_host: str
    dest_host: str | None = None
    status: MigrationStatus = MigrationStatus.MIGRATING  # machine.MIGRATION_START
    id: int | None = None
    created_at: datetime.datetime = field(default_factory=utcnow)
    updated_at: datetime.datetime = field(default_factory=utcnow)
    # Who asked for the move, as nova records it (the request's user and project, not
    # the server's owner's); None when that was not recorded.
    user_id: str | None = None
    project_id: str | None = None
