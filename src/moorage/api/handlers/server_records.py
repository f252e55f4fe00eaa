"""A server as its caller may see it, and the one way the API changes what its owner
said of it (name, description, metadata, tags...): read, change, compare-and-set.

Why a compare-and-set, round after round: two writers of one server's metadata (a
user's POST of one key, a tool's of another) must not lose each other's keys, and
none of these writes is a transition of the lifecycle that could be ordered by one.
Each round reads the server inside the write transaction and writes only if its
attributes (and, for a write nova allows only in some states, its state) are still
what the round read (``store.describe``). The read locks the row on PostgreSQL
(SQLite's writers of a process take turns anyway), so writers of one server queue
and a round's set holds; without it eight writers of one server lost round after
round to each other. The compare-and-set stays the guarantee: a writer that changed
the attributes without the lock still makes the set miss, and the next round starts
from what it wrote.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy.engine import Connection

from moorage.api import work
from moorage.api.errors import Conflict, NotFound
from moorage.api.http import ApiRequest
from moorage.lifecycle import store
from moorage.lifecycle.machine import Precondition, Transition
from moorage.lifecycle.records import ServerRecord
from moorage.lifecycle.states import VM_STATES
from moorage.policy import PolicyValue

# Rounds before a 409: each lost to a writer that changed the server meanwhile.
TRIES = 10


def visible(req: ApiRequest, record: ServerRecord) -> bool:
    """Another project's server is not the caller's to see (unless an admin's)."""
    return req.context.is_admin or record.project_id == req.context.project_id


def target(record: ServerRecord) -> dict[str, PolicyValue]:
    """The policy target of a server: its owner."""
    return {"project_id": record.project_id, "user_id": record.user_id}


def server_or_404(req: ApiRequest, uuid: str, writing: Connection | None = None
                  ) -> ServerRecord:
    """The server, if the caller may see it: another project's server is a 404, as in
    nova, so its existence is not disclosed. ``writing``: read in that write
    transaction, the row locked until it ends."""
    if writing is None:
        with req.state.database.reader() as conn:
            record = store.load_server(conn, uuid)
    else:
        record = store.load_server(writing, uuid, for_update=True)
    if record is None or not visible(req, record):
        raise NotFound(f"Instance {uuid} could not be found.")
    return record


def refuse_locked(req: ApiRequest, record: ServerRecord) -> None:
    """nova's check_instance_lock: a locked server takes no change but an admin's (a
    409, in nova's words)."""
    if record.attributes.locked and not req.context.is_admin:
        raise Conflict(f"Instance {record.uuid} is locked")


def require(record: ServerRecord, precondition: Precondition | Transition, action: str
            ) -> None:
    """409 unless the server is where ``precondition`` (or the transition) allows
    ``action`` (nova's words: "Cannot 'update tag' instance X while it is in vm_state
    building")."""
    if precondition.allows(record.status, record.task_state):
        return
    if record.status in precondition.statuses:
        where = f"task_state {record.task_state}"
    else:
        where = f"vm_state {VM_STATES.get(record.status, record.status.lower())}"
    raise Conflict(f"Cannot '{action}' instance {record.uuid} while it is in {where}; "
                   f"{precondition.name} needs {precondition.needs()}.")


Change = Callable[[ServerRecord], ServerRecord]


def rewrite(req: ApiRequest, uuid: str, rule: str, change: Change, *,
            precondition: Precondition | None = None, action: str = "",
            lockable: bool = False, instance_action: str | None = None) -> ServerRecord:
    """The server as ``change`` leaves it (its ``name`` and ``attributes``), written by
    compare-and-set. Each round: read, authorize ``rule``, refuse a locked server
    (``lockable``: nova checks the lock on this write) and hold the precondition
    (409), change (which may refuse, 400 or 404); unchanged, nothing is written but
    ``instance_action`` (nova's name of what was asked, for os-instance-actions),
    which is recorded in the same transaction whenever given."""
    for _ in range(TRIES):
        with req.state.database.writer() as writer:
            record = server_or_404(req, uuid, writer.conn)
            req.authorize(rule, target(record))
            if lockable:
                refuse_locked(req, record)
            if precondition is not None:
                require(record, precondition, action)
            changed = change(record)
            if (changed.name, changed.attributes) == (record.name, record.attributes):
                if instance_action is not None:
                    work.record_action(req, writer.conn, uuid, instance_action)
                return record
            if store.describe(writer.conn, record, changed.name, changed.attributes,
                              precondition):
                if instance_action is not None:
                    work.record_action(req, writer.conn, uuid, instance_action)
                return changed
    raise Conflict(f"Instance {uuid} was changed by others {TRIES} times while this "
                   "request changed it; try again.")

