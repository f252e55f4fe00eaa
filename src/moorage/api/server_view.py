"""A server as the compute API shows it: nova's body, field by field as the asked
microversion has it (the gates of moorage.api.microversion), and Moorage's additions
only for a client that asks for them.

Why the additions are asked for: a client validating nova's response schemas (Tempest,
some SDKs) refuses a body with a field nova does not send, and nova's fault ``details``
is text. Moorage's own client and CLI send ``Moorage-Additions: 1`` and read
``moorage:scheduling`` (what the request filters added, the candidates, every host
tried) and the fault's typed details; the others read nova's body and nothing else.
Whoever the host policy does not let see hosts reads the additions without them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from moorage.api import microversion as mv
from moorage.api.availability_zones import zone_of_host
from moorage.api.handlers.server_groups import groups_of
from moorage.api.handlers.server_records import target
from moorage.api.http import ApiRequest
from moorage.api.timestamps import iso_time
from moorage.conf.api import user_floor
from moorage.jsonvalue import JSONValue
from moorage.lifecycle.history import attempts_json
from moorage.lifecycle.records import ServerRecord
from moorage.lifecycle.states import VM_STATES, ServerStatus, power_state
from moorage.model.discretion import Floor
from moorage.policy import PolicyValue

# nova shows progress in these statuses, and a fault in these.
_PROGRESS = frozenset({ServerStatus.ACTIVE, ServerStatus.BUILD, ServerStatus.REBUILD,
                       ServerStatus.RESIZE, ServerStatus.VERIFY_RESIZE})
_FAULTED = frozenset({ServerStatus.ERROR, ServerStatus.DELETED})

# A body the API answers, built field by field.
View = dict[str, JSONValue]

EXTENDED_RULE = "os_compute_api:os-extended-server-attributes"
FLAVOR_EXTRA_SPECS_RULE = "os_compute_api:servers:show:flavor-extra-specs"


def host_id(project_id: str, host: str | None) -> str:
    """nova's ``hostId``: the host, hashed with the project, so a project can tell
    its servers share a host without learning which host it is."""
    if not host:
        return ""
    return hashlib.sha224((project_id + host).encode()).hexdigest()


def _flavor(req: ApiRequest, record: ServerRecord, owner: Mapping[str, PolicyValue]
            ) -> View:
    flavor = record.flavor
    if not req.at(mv.SERVER_FLAVOR_EMBEDDED):
        return {"id": record.flavor_id, "links": req.link("flavors", record.flavor_id)[1:]}
    shown: View = {
        "vcpus": flavor.vcpus, "ram": flavor.memory_mb, "disk": flavor.root_gb,
        "ephemeral": flavor.ephemeral_gb, "swap": flavor.swap_mb,
        "original_name": flavor.name}
    if req.allows(FLAVOR_EXTRA_SPECS_RULE, owner):
        shown["extra_specs"] = dict(flavor.extra_specs)
    return shown


def _image(req: ApiRequest, record: ServerRecord) -> View | str:
    if record.is_bfv:
        return ""
    shown: View = {"id": record.image_id,
                             "links": req.link("images", record.image_id)[1:]}
    if req.at(mv.SERVER_IMAGE_PROPERTIES):
        shown["properties"] = {key: str(value) for key, value
                               in record.image.properties.raw().items()}
    return shown


def _zone(req: ApiRequest, record: ServerRecord) -> str:
    """nova's ``OS-EXT-AZ:availability_zone``: the zone of the server's host, once it
    has one (its aggregates' zone, else the default zone), before that the zone asked
    for. ``pinned_availability_zone`` (2.96) is always the zone asked for."""
    if not record.host:
        return record.availability_zone or ""
    req.hosts()  # the catalog, as fresh as this request (read once per request)
    return zone_of_host(req.state.catalog.aggregates_of(record.host))


def _host_status(req: ApiRequest, record: ServerRecord) -> str:
    """nova's host_status: UP, DOWN, MAINTENANCE (disabled), UNKNOWN, or "" (no host)."""
    if not record.host:
        return ""
    info = req.hosts().get(record.host)
    if info is None:
        return "UNKNOWN"
    if not info.up:
        return "DOWN"
    return "UP" if info.enabled else "MAINTENANCE"


def _fault(req: ApiRequest, record: ServerRecord, sees_hosts: bool) -> View:
    """nova's fault ({code, created, message}); the typed details are an addition."""
    assert record.fault is not None
    shown = record.fault.to_json() if sees_hosts else record.fault.for_user(
        user_floor(req.state.conf))
    if not req.wants_additions:
        shown.pop("details", None)
    return shown


def server_view(req: ApiRequest, record: ServerRecord) -> View:
    """The detailed server (show, list detail, update) as the request's microversion
    and the caller's policy have it."""
    attributes = record.attributes
    owner = target(record)
    extended = req.allows(EXTENDED_RULE, owner)
    sees_hosts = req.sees_hosts(owner)
    status = record.status
    view: View = {
        "id": record.uuid,
        "name": record.name,
        "status": str(status),
        "tenant_id": record.project_id,
        "user_id": record.user_id,
        "metadata": dict(attributes.metadata),
        "hostId": host_id(record.project_id, record.host),
        "image": _image(req, record),
        "flavor": _flavor(req, record, owner),
        "created": iso_time(record.created_at),
        "updated": iso_time(record.updated_at),
        "addresses": {},
        "accessIPv4": attributes.access_ipv4 or "",
        "accessIPv6": attributes.access_ipv6 or "",
        "links": req.link("servers", record.uuid),
        "OS-DCF:diskConfig": attributes.disk_config,
        "OS-EXT-AZ:availability_zone": _zone(req, record),
        "config_drive": "True" if attributes.config_drive else "",
        "key_name": attributes.key_name,
        "OS-SRV-USG:launched_at": iso_time(record.launched_at),
        "OS-SRV-USG:terminated_at": iso_time(record.deleted_at),
        "OS-EXT-STS:task_state": record.task_state,
        "OS-EXT-STS:vm_state": VM_STATES.get(status, "error"),
        "OS-EXT-STS:power_state": power_state(status),
        "os-extended-volumes:volumes_attached": [],
    }
    if attributes.security_groups:  # nova leaves the key out when there are none
        view["security_groups"] = [{"name": name} for name in attributes.security_groups]
    if status in _PROGRESS:
        view["progress"] = 0  # Moorage does not track a build's progress
    if record.fault is not None and status in _FAULTED:
        view["fault"] = _fault(req, record, sees_hosts)
    if extended:
        view["OS-EXT-SRV-ATTR:host"] = record.host
        view["OS-EXT-SRV-ATTR:hypervisor_hostname"] = record.node
        view["OS-EXT-SRV-ATTR:instance_name"] = f"instance-{record.uuid}"
        if req.at(mv.SERVER_EXTENDED_ATTRIBUTES):
            view.update({
                "OS-EXT-SRV-ATTR:reservation_id": attributes.reservation_id,
                "OS-EXT-SRV-ATTR:launch_index": attributes.launch_index,
                "OS-EXT-SRV-ATTR:hostname": attributes.hostname,
                "OS-EXT-SRV-ATTR:kernel_id": "",
                "OS-EXT-SRV-ATTR:ramdisk_id": "",
                "OS-EXT-SRV-ATTR:root_device_name": None,
                "OS-EXT-SRV-ATTR:user_data": attributes.user_data})
    if req.at(mv.SERVER_LOCKED):
        view["locked"] = attributes.locked
    if req.at(mv.SERVER_HOST_STATUS) and sees_hosts:
        view["host_status"] = _host_status(req, record)
    if req.at(mv.SERVER_DESCRIPTION):
        view["description"] = attributes.description
    if req.at(mv.SERVER_TAGS):
        view["tags"] = list(attributes.tags)
    if req.at(mv.SERVER_TRUSTED_CERTS):
        certificates = attributes.trusted_image_certificates
        view["trusted_image_certificates"] = list(certificates) if certificates else None
    if req.at(mv.SERVER_LOCKED_REASON):
        view["locked_reason"] = attributes.locked_reason
    if req.at(mv.SERVER_HOSTNAME) and not extended:
        view["OS-EXT-SRV-ATTR:hostname"] = attributes.hostname
    if req.at(mv.SERVER_PINNED_ZONE):
        view["pinned_availability_zone"] = record.availability_zone
    if req.at(mv.SERVER_SCHEDULER_HINTS):
        view["scheduler_hints"] = dict(attributes.scheduler_hints)
    if req.wants_additions:
        view["moorage:scheduling"] = scheduling_view(
            record, sees_hosts, user_floor(req.state.conf))
    return view


def shown_server(req: ApiRequest, record: ServerRecord) -> View:
    """GET /servers/{id}: the detailed server, and from 2.71 its server groups."""
    view = server_view(req, record)
    if req.at(mv.SERVER_GROUPS_SHOWN):
        view["server_groups"] = groups_of(req, record)
    return view


# What nova's answers to PUT /servers/{id} and rebuild leave out below 2.75 (its view
# builder with those show_* switched off); the extended attributes go with them.
_OFF_CHANGED_BODIES = ("OS-EXT-AZ:availability_zone", "config_drive", "key_name",
                       "OS-SRV-USG:launched_at", "OS-SRV-USG:terminated_at",
                       "security_groups", "OS-EXT-STS:task_state", "OS-EXT-STS:vm_state",
                       "OS-EXT-STS:power_state", "os-extended-volumes:volumes_attached",
                       "host_status")


def changed_server(req: ApiRequest, record: ServerRecord, *,
                   with_key_name: bool = False) -> View:
    """The server in the answer to an update or a rebuild: from 2.75 the shown server;
    before, nova's shorter body (``with_key_name``: a rebuild's from 2.54), with the
    server groups from 2.71."""
    view = shown_server(req, record)
    if req.at(mv.SERVER_CONSISTENT_BODIES):
        return view
    for name in _OFF_CHANGED_BODIES:
        if not (name == "key_name" and with_key_name):
            view.pop(name, None)
    for name in [name for name in view if name.startswith("OS-EXT-SRV-ATTR:")]:
        del view[name]
    return view


def summary_view(req: ApiRequest, record: ServerRecord) -> View:
    """A server in GET /servers: id, name, links."""
    return {"id": record.uuid, "name": record.name, "links": req.link("servers", record.uuid)}


def scheduling_view(record: ServerRecord, sees_hosts: bool, floor: Floor) -> View:
    """``moorage:scheduling``: the last scheduling, with the server's attempt history (a
    move keeps its own attempts in its record, which show instead). Those the host
    policy does not let see hosts read it without the fields that identify one."""
    scheduling = record.scheduling
    if sees_hosts:
        shown: View = {"attempts": attempts_json(record.attempts)}
        if scheduling is not None:
            shown.update(scheduling.to_json())
        return shown
    shown = {"attempts": [attempt.for_user() for attempt in record.attempts]}
    if scheduling is not None:
        shown.update(scheduling.for_user(floor))
    return shown
