"""A server's addresses (``/servers/{id}/ips``), network interfaces
(``/servers/{id}/os-interface``) and volume attachments
(``/servers/{id}/os-volume_attachments``), as nova lists them.

Why the lists are empty: Moorage has no network service (Neutron) and no volume
service (Cinder), so a server has no port and no attached volume; nova answers the
same lists, empty, for a server booted with ``networks: none`` and no volume. Clients
read them for any server (openstacksdk's ``compute.server_ips``, novaclient's
``interface-list`` and ``volume-attachments``): a 404 told them the server was missing.
Attaching an interface or a volume is a 400 that says why it cannot be done.
"""

from __future__ import annotations

from moorage.api.errors import BadRequest, NotFound
from moorage.api.handlers.server_records import server_or_404, target
from moorage.api.http import ApiRequest, json_response
from moorage.web import Response

NO_NETWORK = "Moorage has no network service: a server has no port to attach."
NO_VOLUME = "Moorage has no volume service: a server has no volume to attach."


def _authorized(req: ApiRequest, rule: str) -> None:
    """The server must be the caller's to see (else 404), and ``rule`` allow it."""
    req.authorize(rule, target(server_or_404(req, req.params["server_id"])))


def list_addresses(req: ApiRequest) -> Response:
    """A server's addresses by network: none."""
    _authorized(req, "os_compute_api:ips:index")
    return json_response({"addresses": {}})


def show_network_addresses(req: ApiRequest) -> Response:
    """A server's addresses on one network: it is on none (nova's 404)."""
    _authorized(req, "os_compute_api:ips:show")
    raise NotFound("Instance is not a member of specified network")


def list_interfaces(req: ApiRequest) -> Response:
    """A server's network interfaces (its ports): none."""
    _authorized(req, "os_compute_api:os-attach-interfaces:list")
    return json_response({"interfaceAttachments": []})


def attach_interface(req: ApiRequest) -> Response:
    _authorized(req, "os_compute_api:os-attach-interfaces:create")
    raise BadRequest(NO_NETWORK)


def list_volume_attachments(req: ApiRequest) -> Response:
    """A server's attached volumes: none."""
    _authorized(req, "os_compute_api:os-volumes-attachments:index")
    return json_response({"volumeAttachments": []})


def attach_volume(req: ApiRequest) -> Response:
    _authorized(req, "os_compute_api:os-volumes-attachments:create")
    raise BadRequest(NO_VOLUME)
