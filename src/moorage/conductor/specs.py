"""The request spec for a server's next scheduling, from what the server is."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from moorage.lifecycle.records import ServerRecord
from moorage.model.flavor import Flavor
from moorage.model.image import Image
from moorage.scheduler.filter_records import records_json
from moorage.scheduler.types import RequestSpec, Selection


def request_spec(record: ServerRecord, *, flavor: Flavor | None = None,
                 image: Image | None = None, ignore_hosts: Iterable[str] = (),
                 requested_host: str | None = None, rebuild: bool = False) -> RequestSpec:
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
    )


def move_spec(record: ServerRecord, flavor: Flavor | None, target: str | None
              ) -> RequestSpec:
    """The spec of a cold migration or resize (``flavor``: the new one) of a server:
    anywhere but where it is, or on ``target``."""
    return request_spec(record, flavor=flavor or record.flavor,
                        ignore_hosts=(record.host,) if record.host else (),
                        requested_host=target)


def scheduling_record(spec: RequestSpec, operation: str,
                      selection: Selection | None = None,
                      error: str | None = None,
                      error_for_user: str | None = None,
                      seconds: float | None = None,
                      decisions: Mapping[str, object] | None = None) -> dict[str, object]:
    """What the server's ``moorage:scheduling`` shows about its last scheduling: the
    request filters' records and the scheduler's decisions (the selection's, or a
    NoValidHost's ``decisions``). ``error_for_user``: the error as a user who may not
    see hosts reads it, when ``error`` names one."""
    record: dict[str, object] = {
        "operation": operation,
        "filters": records_json(spec.filter_records),
    }
    if selection is not None:
        record["candidates"] = selection.candidates
        record["hosts_passing_filters"] = selection.hosts_passing_filters
        record["alternates"] = [d.host for d in selection.alternates]
        record["decisions"] = selection.decisions.to_json()
    elif decisions is not None:
        record["decisions"] = dict(decisions)
    if error is not None:
        record["error"] = error
    if error_for_user is not None and error_for_user != error:
        record["error_for_user"] = error_for_user
    if seconds is not None:
        record["seconds"] = round(seconds, 6)
    return record
