"""The request spec for a server's next scheduling, from what the server is, and the
record of a scheduling that the server keeps."""

from __future__ import annotations

from collections.abc import Iterable

from moorage.lifecycle.history import SchedulingRecord
from moorage.lifecycle.records import ServerRecord
from moorage.model.flavor import Flavor
from moorage.model.image import Image
from moorage.scheduler.decisions import Decisions
from moorage.scheduler.server_groups import GroupPlacement
from moorage.scheduler.types import RequestSpec, Selection


def request_spec(record: ServerRecord, *, flavor: Flavor | None = None,
                 image: Image | None = None, ignore_hosts: Iterable[str] = (),
                 requested_host: str | None = None, rebuild: bool = False,
                 server_group: GroupPlacement | None = None) -> RequestSpec:
    """A fresh spec each time: the request filters run again on every scheduling, as
    upstream's do (nothing they add is persisted)."""
    return RequestSpec(
        instance_uuid=record.uuid,
        project_id=record.project_id,
        user_id=record.user_id,
        flavor=flavor or record.flavor,
        image=image or record.image,
        is_bfv=record.is_bfv,
        availability_zone=record.availability_zone,
        ignore_hosts=frozenset(ignore_hosts),
        requested_host=requested_host,
        rebuild=rebuild,
        server_group=server_group,
    )


def move_spec(record: ServerRecord, flavor: Flavor | None, target: str | None,
              server_group: GroupPlacement | None = None) -> RequestSpec:
    """The spec of a cold migration or resize (``flavor``: the new one) of a server:
    anywhere but where it is, or on ``target``."""
    return request_spec(record, flavor=flavor or record.flavor,
                        ignore_hosts=(record.host,) if record.host else (),
                        requested_host=target, server_group=server_group)


def scheduling_record(spec: RequestSpec, operation: str,
                      selection: Selection | None = None, *,
                      error: str | None = None, error_for_user: str | None = None,
                      seconds: float | None = None,
                      decisions: Decisions | None = None) -> SchedulingRecord:
    """The server's record of its last scheduling: the request filters' records and the
    scheduler's decisions (the selection's, or a NoValidHost's ``decisions``).
    ``error_for_user``: the error as a user who may not see hosts reads it, when
    ``error`` names one."""
    if selection is not None:
        return SchedulingRecord(
            operation, tuple(spec.filter_records), candidates=selection.candidates,
            hosts_passing_filters=selection.hosts_passing_filters,
            alternates=tuple(d.host for d in selection.alternates),
            decisions=selection.decisions, error=error, error_for_user=error_for_user,
            seconds=seconds)
    return SchedulingRecord(operation, tuple(spec.filter_records), decisions=decisions,
                            error=error, error_for_user=error_for_user, seconds=seconds)
