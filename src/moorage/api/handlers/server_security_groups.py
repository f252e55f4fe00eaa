"""The addSecurityGroup and removeSecurityGroup actions, in nova's shapes.

Moorage has no network service: a server's security groups are the names its
create gave (``default`` when it gave none), kept with its attributes and shown as
nova shows them. These actions change that list, written by
``server_records.rewrite``'s compare-and-set; nova records neither as an instance
action. Removing a group the server does not have is nova's 404.
"""

from __future__ import annotations

import dataclasses

from moorage.api.errors import BadRequest, NotFound
from moorage.api.handlers.server_records import rewrite
from moorage.api.http import ApiRequest
from moorage.lifecycle.records import ServerRecord
from moorage.web import Response

RULE = "os_compute_api:os-security-groups:"


def _name(argument: object, action: str) -> str:
    """The group's name (the schema checked its type); 400 when it is blank."""
    name = argument.get("name") if isinstance(argument, dict) else None
    if not isinstance(name, str) or not name.strip():
        raise BadRequest(f"{action} needs the security group's 'name'.")
    return name.strip()


def add(req: ApiRequest, record: ServerRecord, argument: object) -> Response:
    name = _name(argument, "addSecurityGroup")

    def change(current: ServerRecord) -> ServerRecord:
        groups = current.attributes.security_groups
        if name in groups:
            return current
        return dataclasses.replace(current, attributes=dataclasses.replace(
            current.attributes, security_groups=(*groups, name)))

    rewrite(req, record.uuid, RULE + "add", change)
    return Response(status=202)


def remove(req: ApiRequest, record: ServerRecord, argument: object) -> Response:
    name = _name(argument, "removeSecurityGroup")

    def change(current: ServerRecord) -> ServerRecord:
        groups = current.attributes.security_groups
        if name not in groups:
            raise NotFound(f"Security group {name} not associated with the instance")
        return dataclasses.replace(current, attributes=dataclasses.replace(
            current.attributes, security_groups=tuple(g for g in groups if g != name)))

    rewrite(req, record.uuid, RULE + "remove", change)
    return Response(status=202)
