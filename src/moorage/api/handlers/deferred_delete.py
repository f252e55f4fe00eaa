"""The restore and forceDelete actions of nova's deferred delete, answered as nova
answers them with ``reclaim_instance_interval = 0`` (its default): a delete is never
deferred, so no server is ever SOFT_DELETED, and each is a 409 naming the state the
server is in. Moorage has no soft delete to configure.
"""

from __future__ import annotations

from moorage.api.errors import Conflict
from moorage.api.handlers.server_records import target
from moorage.api.http import ApiRequest
from moorage.lifecycle.records import ServerRecord
from moorage.lifecycle.states import VM_STATES
from moorage.web import Response

RULE = "os_compute_api:os-deferred-delete:"


def _refuse(req: ApiRequest, record: ServerRecord, action: str, rule: str) -> Response:
    req.authorize(RULE + rule, target(record))
    state = VM_STATES.get(record.status, record.status.lower())
    raise Conflict(f"Cannot '{action}' instance {record.uuid} while it is in vm_state "
                   f"{state}; only a soft-deleted server can be, and Moorage deletes at "
                   "once (nova's reclaim_instance_interval = 0).")


def restore(req: ApiRequest, record: ServerRecord, argument: object) -> Response:
    return _refuse(req, record, "restore", "restore")


def force_delete(req: ApiRequest, record: ServerRecord, argument: object) -> Response:
    return _refuse(req, record, "forceDelete", "force")
