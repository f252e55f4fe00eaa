"""Servers: create, show, list, delete, and the actions that move or rebuild them.

Nova's shapes. A request is validated completely before anything is stored, so bad
input (an unknown flavor or image, a malformed block device mapping, a forced host
that does not exist) leaves no server record, claim or allocation behind. What
passes is recorded (BUILD, REBUILD, RESIZE...) and handed to the conductor, which
does the slow part; the server's ``moorage:scheduling`` says what the scheduler's
filters added, how many candidates placement returned and every host tried.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import ipaddress
import secrets
import uuid as uuidlib
from collections.abc import Callable, Mapping
from typing import Any

from sqlalchemy.engine import Connection
from sqlalchemy.exc import DataError

from moorage import failpoints
from moorage.api import lookups, server_query, work
from moorage.api import microversion as mv
from moorage.api.errors import BadRequest, Conflict, Forbidden, NotFound
from moorage.api.handlers import (
    console_output,
    deferred_delete,
    multi_create,
    server_groups,
    server_lock,
    server_power,
    server_security_groups,
)
from moorage.api.handlers.common import boolean, string
from moorage.api.handlers.paging import page_body
from moorage.api.handlers.server_records import refuse_locked, rewrite, server_or_404, target
from moorage.api.http import ApiRequest, json_response, no_content
from moorage.api.quotas import admission
from moorage.api.quotas import engine as quota_engine
from moorage.api.quotas.engine import OverQuota
from moorage.api.server_view import (
    View,
    changed_server,
    server_view,
    shown_server,
    summary_view,
)
from moorage.api.storage import keypairs as keypair_store
from moorage.lifecycle import machine, store
from moorage.lifecycle import server_groups as group_store
from moorage.lifecycle.attributes import ServerAttributes, hostname_from
from moorage.lifecycle.operations import Operation
from moorage.lifecycle.records import ServerRecord
from moorage.lifecycle.states import VM_STATES, OperationKind, ServerStatus, TaskState
from moorage.lifecycle.store import NO_CHANGES, Applied, ServerChanges
from moorage.model.codec import flavor_to_json, image_to_json
from moorage.model.flavor import Flavor
from moorage.web import Response

DELETED, ERROR = ServerStatus.DELETED, ServerStatus.ERROR
# nova's policy for the filters of a server list beyond a user's (an administrator's).
ALL_FILTERS_RULE = "os_compute_api:servers:allow_all_filters"


# -- reading -----------------------------------------------------------------------
def show_server(req: ApiRequest) -> Response:
    record = server_or_404(req, req.params["server_id"])
    req.authorize("os_compute_api:servers:show", target(record))
    return json_response({"server": shown_server(req, record)})


def _list(req: ApiRequest, rule: str) -> list[ServerRecord]:
    """The page of servers the query string asks for (moorage.api.server_query says
    how nova reads it); every filter, the order and the page are the store's query."""
    req.authorize(rule)
    listing = server_query.read(
        req.query, req.version, req.context,
        all_filters=req.state.policy.allows(ALL_FILTERS_RULE, req.context))
    if listing.all_tenants:
        req.authorize(rule + ":get_all_tenants")
    if listing.matches_nothing:
        return []
    with req.state.database.reader() as conn:
        try:
            return store.list_servers(conn, listing.query)
        except LookupError:
            raise BadRequest(f"marker [{listing.query.marker}] not found: give the id of "
                             "a server the previous page listed.") from None
        except DataError as exc:  # a regular expression PostgreSQL cannot read
            raise BadRequest(f"A filter's regular expression is not one the database "
                             f"reads: {exc.orig}") from None


def _page(req: ApiRequest, collection: str, found: list[ServerRecord],
          views: list[View]) -> Response:
    """nova's list body: the servers, and a next link after a full page."""
    return json_response(page_body(req, collection, "servers", views,
                                   found[-1].uuid if found else None))


def list_servers(req: ApiRequest) -> Response:
    found = _list(req, "os_compute_api:servers:index")
    return _page(req, "servers", found, [summary_view(req, r) for r in found])


def list_servers_detail(req: ApiRequest) -> Response:
    found = _list(req, "os_compute_api:servers:detail")
    return _page(req, "servers/detail", found, [server_view(req, r) for r in found])


# -- update ------------------------------------------------------------------------
def update_server(req: ApiRequest) -> Response:
    """Rename a server, or change its description, hostname or access addresses."""
    body = req.json_object("server")

    def change(record: ServerRecord) -> ServerRecord:
        return dataclasses.replace(record, name=body.get("name", record.name),
                                   attributes=_updated(record.attributes, body))

    uuid = rewrite(req, req.params["server_id"], "os_compute_api:servers:update",
                   change).uuid
    return json_response({"server": changed_server(req, server_or_404(req, uuid))})


def _updated(current: ServerAttributes, body: Mapping[str, Any]) -> ServerAttributes:
    """``current`` with what a PUT body changes (the version's schema said which fields
    it may give); an empty access address clears it, as in nova."""
    return dataclasses.replace(
        current,
        description=body.get("description", current.description),
        hostname=body.get("hostname", current.hostname),
        access_ipv4=(body["accessIPv4"] or None) if "accessIPv4" in body
        else current.access_ipv4,
        access_ipv6=_ipv6(body["accessIPv6"]) if "accessIPv6" in body
        else current.access_ipv6,
        disk_config=body.get("OS-DCF:diskConfig", current.disk_config))


# -- create ------------------------------------------------------------------------
def _boot_mapping(body: Mapping[str, Any]) -> tuple[str | None, int | None]:
    """(image id, volume size) of block_device_mapping_v2's boot entry, or (None, None)
    without one; the size is None for a local root disk.

    Moorage has no volume service: a boot volume is created from an image
    (source_type image, destination_type volume), which is all scheduling needs to
    know (no root disk on the host; the image's properties still apply). A boot entry
    from an image to a local disk is the image an imageRef names (python-openstackclient
    sends both for ``server create --image``), as in nova."""
    mappings = body.get("block_device_mapping_v2")
    if mappings is None:
        return None, None
    if not isinstance(mappings, list) or not all(isinstance(m, dict) for m in mappings):
        raise BadRequest("block_device_mapping_v2 must be a list of objects.")
    boot = [m for m in mappings if str(m.get("boot_index")) == "0"]
    if len(boot) != 1:
        raise BadRequest("block_device_mapping_v2 needs exactly one entry with "
                         "boot_index 0.")
    entry = boot[0]
    if entry.get("source_type") != "image" or entry.get("destination_type") not in (
            "volume", "local"):
        raise BadRequest(
            "Only a boot entry from an image is supported (source_type 'image', "
            "destination_type 'volume' or 'local'): Moorage has no volume service. Got "
            f"source_type {entry.get('source_type')!r}, destination_type "
            f"{entry.get('destination_type')!r}.")
    image_id = entry.get("uuid")
    if not isinstance(image_id, str) or not image_id:
        raise BadRequest("The boot entry of block_device_mapping_v2 needs the image's "
                         "'uuid'.")
    if entry["destination_type"] == "local":
        return image_id, None
    size = entry.get("volume_size")
    if isinstance(size, str) and size.isdigit():
        size = int(size)  # nova's volume_size takes a string of digits
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise BadRequest(f"volume_size must be a positive integer (GiB), not {size!r}.")
    return image_id, size


def create_server(req: ApiRequest) -> Response:
    body = req.json_object("server")
    req.authorize("os_compute_api:servers:create")
    record = new_server(req, body)
    group = server_groups.member_of_create(req, record.attributes.scheduler_hints)
    min_count, max_count = multi_create.counts(body)
    work.require_conductor(req)
    conf = req.state.conf
    injected = multi_create.injected_files(body)

    def create(conn: Connection) -> list[tuple[ServerRecord, Operation]] | OverQuota:
        # The quota's check and the inserts in one transaction (admission says how
        # it is serialised per project); a refusal is answered, not raised, so that
        # the servers committed with it in a group commit are not written again.
        try:
            count = admission.admit_servers(conn, conf, record, min_count, max_count,
                                            injected, group)
        except OverQuota as refusal:
            return refusal
        made = []
        for server in multi_create.copies(record, count, hostname_asked="hostname" in body):
            store.insert_server(conn, server)
            if group is not None:
                group_store.add_member(conn, group, server.uuid)
            made.append((server, work.accept(req, conn, server.uuid, OperationKind.BUILD,
                                             new=True)))
        return made

    committer = req.state.conductor.committer if req.state.conductor is not None else None
    if committer is not None:  # committed with other servers' changes
        created = committer.write(create)
    else:
        with req.state.database.writer() as writer:
            created = create(writer.conn)
    if isinstance(created, OverQuota):
        raise Forbidden(str(created))
    failpoints.reach("api.create.after_commit")
    for server, operation in created:
        work.dispatch(req, operation, server)
    attributes = record.attributes
    if _given_true(body, "return_reservation_id"):
        return json_response({"reservation_id": attributes.reservation_id}, status=202)
    first = created[0][0]
    return json_response({"server": {
        "id": first.uuid, "links": req.link("servers", first.uuid),
        "OS-DCF:diskConfig": attributes.disk_config,
        "security_groups": [{"name": name} for name in attributes.security_groups],
        # nova answers the password it set, or one it made up; Moorage's guests take
        # none (no metadata service), so it is not stored.
        "adminPass": body.get("adminPass") or secrets.token_urlsafe(9)}}, status=202)


def _given_true(body: Mapping[str, Any], name: str) -> bool:
    """A boolean field of the body, false when absent (validated by the schema)."""
    return body.get(name) is not None and boolean(body[name], name)


def _ipv6(address: str | None) -> str | None:
    """An IPv6 access address as nova stores it, compressed (the schema checked it)."""
    if not address:
        return None
    try:
        return ipaddress.IPv6Address(address).compressed
    except ValueError:
        raise BadRequest(f"accessIPv6 {address!r} is not an IPv6 address.") from None


def _checked_user_data(user_data: str | None) -> str | None:
    if user_data is not None:
        try:
            base64.b64decode(user_data, validate=True)
        except (binascii.Error, ValueError):
            raise BadRequest("user_data must be base64 (RFC 4648), as nova takes it.") from None
    return user_data


def _attributes(req: ApiRequest, name: str, body: Mapping[str, Any]) -> ServerAttributes:
    """What the create body says of the server beyond what it runs (validated by the
    version's schema already)."""
    user_data = _checked_user_data(body.get("user_data"))
    envelope = req.json_object()  # the hints sit beside "server", not in it
    hints = (envelope.get("os:scheduler_hints")
             or envelope.get("OS-SCH-HNT:scheduler_hints") or {})
    metadata = dict(body.get("metadata") or {})  # its quota: quotas.admission
    groups = body.get("security_groups") or [{"name": "default"}]
    certificates = body.get("trusted_image_certificates")
    return ServerAttributes(
        hostname=body.get("hostname") or hostname_from(name),
        description=body.get("description"),
        metadata=metadata,
        tags=tuple(dict.fromkeys(body.get("tags") or ())),
        key_name=body.get("key_name"),
        access_ipv4=body.get("accessIPv4") or None,
        access_ipv6=_ipv6(body.get("accessIPv6")),
        disk_config=body.get("OS-DCF:diskConfig") or "MANUAL",
        config_drive=_given_true(body, "config_drive"),
        user_data=user_data,
        security_groups=tuple(dict.fromkeys(str(g["name"]) for g in groups if "name" in g)),
        scheduler_hints=dict(hints),
        trusted_image_certificates=tuple(certificates) if certificates else None,
        reservation_id="r-" + secrets.token_hex(4),
    )


def new_server(req: ApiRequest, body: Mapping[str, Any]) -> ServerRecord:
    """The server a POST /servers body asks for, validated as a boot validates it, not
    stored (the boot stores it; the dry run plans it)."""
    name = string(body, "name", required=True)
    assert name is not None
    flavor_ref = string(body, "flavorRef", required=True)
    assert flavor_ref is not None
    mapped_image, volume_size = _boot_mapping(body)
    image_ref = body.get("imageRef") or None
    if image_ref is not None and not isinstance(image_ref, str):
        raise BadRequest(f"imageRef must be an image id, not {image_ref!r}.")
    if mapped_image is not None:
        if image_ref is not None and image_ref != mapped_image:
            raise BadRequest("imageRef and the boot entry's image differ; give one.")
        image_ref = mapped_image
    boot_volume = volume_size is not None
    if image_ref is None:
        raise BadRequest("'imageRef' is a required property (or a boot volume from an "
                         "image in block_device_mapping_v2).")
    req.state.definitions.refresh()  # once for both lookups
    flavor_id, flavor = _flavor_for_create(req, flavor_ref, refreshed=True)
    image = _image_for_create(req, image_ref, refreshed=True)
    if volume_size is not None and image.min_disk_gb > volume_size:
        raise BadRequest(f"Volume size {volume_size} GiB is smaller than the image's "
                         f"min_disk {image.min_disk_gb} GiB.")
    if not boot_volume and flavor.root_gb and image.min_disk_gb > flavor.root_gb:
        raise BadRequest(f"Flavor's disk is too small for requested image: flavor "
                         f"{flavor_id} has {flavor.root_gb} GiB, the image needs "
                         f"{image.min_disk_gb} GiB.")
    if image.min_ram_mb > flavor.memory_mb:
        raise BadRequest(f"Flavor's memory is too small for requested image: flavor "
                         f"{flavor_id} has {flavor.memory_mb} MiB, the image needs "
                         f"{image.min_ram_mb} MiB.")
    zone, host = _zone_and_host(req, body)
    _check_key_name(req, body.get("key_name"))
    created = machine.transition("build.accepted")
    assert created.status is not None
    return ServerRecord(
        uuid=str(uuidlib.uuid4()), name=name,
        project_id=req.context.project_id or "", user_id=req.context.user_id or "",
        flavor_id=flavor_id, flavor=flavor, image_id=image.id, image=image,
        is_bfv=boot_volume, availability_zone=zone,
        status=created.status, task_state=created.task, requested_host=host,
        attributes=_attributes(req, name, body),
    )


def _check_key_name(req: ApiRequest, key_name: str | None) -> None:
    """A server's key pair is one of the caller's own (an admin's too), as in nova."""
    if key_name is None:
        return
    with req.state.database.reader() as conn:
        owned = keypair_store.find_keypair(conn, req.context.user_id or "", key_name)
    if owned is None:
        raise BadRequest("Invalid key_name provided.")


def _flavor_for_create(req: ApiRequest, flavor_ref: str, *, refreshed: bool = False
                       ) -> tuple[str, Flavor]:
    flavor_id = flavor_ref.rstrip("/").rsplit("/", 1)[-1]
    try:
        return flavor_id, lookups.flavor(req.state, flavor_id, req.context, refreshed=refreshed)
    except NotFound:
        raise BadRequest(f"Flavor {flavor_id} could not be found.") from None


def _image_for_create(req: ApiRequest, image_ref: str, *, refreshed: bool = False) -> Any:
    image_id = image_ref.rstrip("/").rsplit("/", 1)[-1]
    try:
        return lookups.image(req.state, image_id, req.context, refreshed=refreshed)
    except NotFound:
        raise BadRequest(f"Image {image_id} could not be found.") from None


def _availability_zone(req: ApiRequest, zone: str | None) -> str | None:
    if zone is None:
        return None
    known = lookups.availability_zones(req.state)
    if zone not in known:
        raise BadRequest(f"The requested availability zone {zone!r} is not available; "
                         f"known zones: {', '.join(sorted(known)) or 'none'}.")
    return zone


def _zone_and_host(req: ApiRequest, body: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """The zone asked for, and the host an admin forces: ``availability_zone`` may be
    nova's "zone:host" or "zone:host:node" (zone empty: any), and from 2.74 ``host``
    and ``hypervisor_hostname`` name them instead."""
    zone = string(body, "availability_zone", allow_none=True)
    host = string(body, "host", allow_none=True)
    node = string(body, "hypervisor_hostname", allow_none=True)
    if zone is not None and ":" in zone:
        parts = zone.split(":")
        if len(parts) > 3:
            raise BadRequest(f"availability_zone {zone!r} is not 'zone', 'zone:host' or "
                             "'zone:host:node'.")
        zone, host = parts[0] or None, parts[1] or None
        node = parts[2] if len(parts) == 3 else None
    return _availability_zone(req, zone), _forced_host(req, host, node or None)


def _forced_host(req: ApiRequest, host: str | None, node: str | None) -> str | None:
    if host is None and node is None:
        return None
    req.authorize("os_compute_api:servers:create:forced_host")
    hosts = lookups.hosts(req.state)
    if host is not None and host not in hosts:
        raise BadRequest(f"Compute host {host} could not be found.")
    if node is not None:
        owner = next((h for h, info in hosts.items() if node in info.nodes), None)
        if owner is None or (host is not None and owner != host):
            raise BadRequest(f"Compute host {node} could not be found.")
        host = owner
    return host


# -- delete ------------------------------------------------------------------------
def delete_server(req: ApiRequest) -> Response:
    uuid = req.params["server_id"]
    record = server_or_404(req, uuid)
    req.authorize("os_compute_api:servers:delete", target(record))
    refuse_locked(req, record)
    work.require_conductor(req)
    if record.task_state == TaskState.DELETING:
        return no_content()  # already on its way
    with req.state.database.writer() as writer:
        if store.apply(writer.conn, machine.transition("delete.accepted"), uuid
                       ) is not Applied.APPLIED:
            now = store.load_server(writer.conn, uuid)
            if now is not None and now.task_state == TaskState.DELETING:
                return no_content()  # another request deleted it meanwhile
            raise NotFound(f"Instance {uuid} could not be found.")
        operation = work.accept(req, writer.conn, uuid, OperationKind.DELETE)
    work.dispatch(req, operation)
    return no_content()


# -- actions -----------------------------------------------------------------------
def server_action(req: ApiRequest) -> Response:
    uuid = req.params["server_id"]
    body = req.json_object()
    if len(body) != 1:
        raise BadRequest(f"Give exactly one action; allowed: {', '.join(sorted(_ACTIONS))}.")
    (action, argument), = body.items()
    handler = _ACTIONS.get(action)
    if handler is None:
        raise BadRequest(f"There is no such action: {action}; allowed: "
                         f"{', '.join(sorted(_ACTIONS))}.")
    record = server_or_404(req, uuid)
    accepted = machine.ACTIONS.get(action)
    if accepted is not None and record.task_state not in accepted.tasks:
        raise Conflict(f"Cannot '{action.removeprefix('os-')}' instance {uuid} while it "
                       f"is in task_state {record.task_state}; {accepted.name} needs "
                       f"{accepted.needs()}.")
    return handler(req, record, argument)


def _require_state(req: ApiRequest, record: ServerRecord, action: str) -> None:
    """The precondition of the action's transition (nova's check_instance_state): a
    409 naming the transition and the state it needs. A locked server was refused
    first (``_LOCKED_FIRST``)."""
    if action in _LOCKED_FIRST:
        refuse_locked(req, record)
    accepted = machine.ACTIONS[action]
    if not accepted.allows(record.status, record.task_state):
        raise Conflict(f"Cannot '{action}' instance {record.uuid} while it is in vm_state "
                       f"{VM_STATES.get(record.status, record.status.lower())}; "
                       f"{accepted.name} needs {accepted.needs()}.")


def _argument(argument: object, action: str) -> dict[str, Any]:
    if argument is None:
        return {}
    if not isinstance(argument, dict):
        raise BadRequest(f"The {action} action takes an object, not {argument!r}.")
    return argument


def _start(req: ApiRequest, record: ServerRecord, action: str, kind: OperationKind,
           arguments: Mapping[str, Any] | None = None,
           changes: ServerChanges = NO_CHANGES,
           admit: Callable[[Connection], None] | None = None) -> None:
    """Record the new state (the action's transition) and the work, if nothing else
    changed the server meanwhile, and hand the work to the conductor. ``admit``: a
    quota's check, in the same transaction (OverQuota: 403)."""
    server_power.accept(req, record, action, machine.ACTIONS[action], kind, arguments,
                        changes, admit)


def _rebuild(req: ApiRequest, record: ServerRecord, argument: object) -> Response:
    req.authorize("os_compute_api:servers:rebuild", target(record))
    args = _argument(argument, "rebuild")
    image_ref = args.get("imageRef")
    if not isinstance(image_ref, str) or not image_ref:
        raise BadRequest("rebuild needs 'imageRef', the id of the image to rebuild with.")
    _require_state(req, record, "rebuild")
    if record.host is None:
        raise Conflict(f"Instance {record.uuid} has no host to rebuild on; delete it and "
                       "create it again.")
    image = _image_for_create(req, image_ref)
    if record.is_bfv and image.id != record.image_id:
        raise BadRequest("Rebuilding a volume-backed server with a different image is "
                         "not supported.")
    if req.at(mv.REBUILD_KEY_NAME) and args.get("key_name") is not None:
        _check_key_name(req, args["key_name"])
    if req.at(mv.REBUILD_USER_DATA):
        _checked_user_data(args.get("user_data"))
    if "metadata" in args:  # within the caller's metadata_items quota, as nova checks
        with req.state.database.reader() as conn:
            limit = quota_engine.metadata_items_limit(
                conn, req.state.conf, req.context.project_id or "", req.context.user_id)
        try:
            quota_engine.check_metadata_items(limit, len(args["metadata"] or {}))
        except OverQuota as refusal:
            raise Forbidden(str(refusal)) from None
    _start(req, record, "rebuild", OperationKind.REBUILD,
           {"image_id": image.id, "image": image_to_json(image),
            "stopped": record.status == ServerStatus.SHUTOFF}, ServerChanges(fault=None))
    rebuilt = rewrite(req, record.uuid, "os_compute_api:servers:rebuild",
                      lambda current: _rebuilt(req, current, args))
    # The answer names the new image, as nova's (which sets it before the rebuild runs;
    # Moorage's record takes it when the rebuild succeeds, see conductor/tasks/rebuild).
    view = changed_server(req, dataclasses.replace(rebuilt, image_id=image.id, image=image),
                          with_key_name=req.at(mv.REBUILD_KEY_NAME))
    view.pop("OS-EXT-SRV-ATTR:user_data", None)  # nova's rebuild shows it as user_data
    # nova answers the password it set, or one it made up (none is stored: see create).
    view["adminPass"] = args.get("adminPass") or secrets.token_urlsafe(9)
    if req.at(mv.REBUILD_USER_DATA):
        view["user_data"] = rebuilt.attributes.user_data
    return json_response({"server": view}, status=202)


def _rebuilt(req: ApiRequest, record: ServerRecord, args: Mapping[str, Any]) -> ServerRecord:
    """What a rebuild's body changes besides the image, as nova applies it: the name,
    metadata (replaced), access addresses and disk config; the description from 2.19,
    the key pair from 2.54 (null removes it), the user data from 2.57 and the hostname
    from 2.90."""
    attributes = _updated(record.attributes, {
        name: args[name] for name in ("accessIPv4", "accessIPv6", "OS-DCF:diskConfig")
        if name in args})
    if "metadata" in args:
        attributes = dataclasses.replace(attributes, metadata=dict(args["metadata"] or {}))
    for gate, field, attribute in ((mv.SERVER_DESCRIPTION, "description", "description"),
                                   (mv.REBUILD_KEY_NAME, "key_name", "key_name"),
                                   (mv.REBUILD_USER_DATA, "user_data", "user_data"),
                                   (mv.SERVER_HOSTNAME, "hostname", "hostname")):
        if req.at(gate) and field in args:
            attributes = dataclasses.replace(attributes, **{attribute: args[field]})
    return dataclasses.replace(record, name=args.get("name", record.name),
                               attributes=attributes)


def resize_target(req: ApiRequest, record: ServerRecord, argument: object
                  ) -> tuple[str, Flavor]:
    """The new flavor of a resize, checked as the resize action checks it."""
    req.authorize("os_compute_api:servers:resize", target(record))
    args = _argument(argument, "resize")
    flavor_ref = args.get("flavorRef")
    if not isinstance(flavor_ref, str | int) or not str(flavor_ref):
        raise BadRequest("resize needs 'flavorRef', the id of the new flavor.")
    flavor_id, flavor = _flavor_for_create(req, str(flavor_ref))
    if flavor_id == record.flavor_id:
        raise BadRequest("When resizing, instances must change flavor!")
    _require_state(req, record, "resize")
    return flavor_id, flavor


def migrate_target(req: ApiRequest, record: ServerRecord, argument: object) -> str | None:
    """The requested host of a cold migration (None: the scheduler's choice), checked
    as the migrate action checks it."""
    req.authorize("os_compute_api:os-migrate-server:migrate", target(record))
    args = _argument(argument, "migrate")
    host = string(args, "host", allow_none=True)
    if host is not None and host not in lookups.hosts(req.state):
        raise BadRequest(f"Compute host {host} could not be found.")
    if host is not None and host == record.host:
        raise BadRequest(f"The target host {host} is the server's current host.")
    _require_state(req, record, "migrate")
    return host


def _resize(req: ApiRequest, record: ServerRecord, argument: object) -> Response:
    flavor_id, flavor = resize_target(req, record, argument)
    conf = req.state.conf
    _start(req, record, "resize", OperationKind.RESIZE,
           {"flavor_id": flavor_id, "flavor": flavor_to_json(flavor),
            "stopped": record.status == ServerStatus.SHUTOFF},
           admit=lambda conn: admission.admit_resize(conn, conf, record, flavor.vcpus,
                                                     flavor.memory_mb))
    return Response(status=202)


def _migrate(req: ApiRequest, record: ServerRecord, argument: object) -> Response:
    host = migrate_target(req, record, argument)
    _start(req, record, "migrate", OperationKind.MIGRATE,
           {"host": host, "stopped": record.status == ServerStatus.SHUTOFF})
    return Response(status=202)


def _confirm_resize(req: ApiRequest, record: ServerRecord, argument: object) -> Response:
    req.authorize("os_compute_api:servers:confirm_resize", target(record))
    _require_state(req, record, "confirmResize")
    _start(req, record, "confirmResize", OperationKind.CONFIRM_RESIZE)
    return no_content()


def _revert_resize(req: ApiRequest, record: ServerRecord, argument: object) -> Response:
    req.authorize("os_compute_api:servers:revert_resize", target(record))
    _require_state(req, record, "revertResize")
    _start(req, record, "revertResize", OperationKind.REVERT_RESIZE)
    return Response(status=202)


def _evacuate(req: ApiRequest, record: ServerRecord, argument: object) -> Response:
    req.authorize("os_compute_api:os-evacuate", target(record))
    args = _argument(argument, "evacuate")
    host = string(args, "host", allow_none=True)
    hosts = lookups.hosts(req.state)
    if host is not None and host not in hosts:
        raise BadRequest(f"Compute host {host} could not be found.")
    _require_state(req, record, "evacuate")
    source = record.host
    if source is None:
        raise Conflict(f"Instance {record.uuid} has no host to evacuate from.")
    info = hosts.get(source)
    if info is not None and info.up:
        raise Conflict(f"Compute service of {source} is still in use; evacuate only "
                       "from a host that is down.")
    if host is not None and host == source:
        raise BadRequest(f"The target host {host} is the server's current host.")
    _start(req, record, "evacuate", OperationKind.EVACUATE, {"host": host},
           ServerChanges(fault=None))
    return json_response({})


_ACTIONS = {
    "rebuild": _rebuild,
    "resize": _resize,
    "migrate": _migrate,
    "confirmResize": _confirm_resize,
    "revertResize": _revert_resize,
    "evacuate": _evacuate,
    "os-stop": server_power.stop,
    "os-start": server_power.start,
    "reboot": server_power.reboot,
    "os-resetState": server_power.reset_state,
    "lock": server_lock.lock,
    "unlock": server_lock.unlock,
    "os-getConsoleOutput": console_output.console_output,
    "addSecurityGroup": server_security_groups.add,
    "removeSecurityGroup": server_security_groups.remove,
    "restore": deferred_delete.restore,
    "forceDelete": deferred_delete.force_delete,
}
# The actions nova's check_instance_lock guards (evacuate, an admin's, is not).
_LOCKED_FIRST = frozenset({"rebuild", "resize", "migrate", "confirmResize",
                           "revertResize"})
