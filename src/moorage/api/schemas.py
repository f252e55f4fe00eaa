"""The request bodies of the compute API, as JSON Schema (draft 2020-12).

Why one table: /openapi.json publishes these schemas and ``moorage.api.validation``
compiles them into the validators dispatch runs before every handler that takes a body,
so the document cannot say one thing while the API does another
(tests/unit/api/test_request_schemas.py holds the two together).

What a schema says is the shape: types, lengths the database columns hold, enums, the
keys allowed. What needs the database or another service (does the flavor exist, is
``trait:X`` a trait, may a host join this zone) stays in the handlers. Field shapes
follow nova's where Moorage reads the field; the values nova would accept and Moorage
ignores (``networks``, ``metadata``, ``key_name``...) are typed, not interpreted.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from typing import Any

from moorage.api import microversion, server_query
from moorage.api.handlers.common import FALSE_WORDS, TRUE_WORDS
from moorage.api.quotas import resources as quota_resources
from moorage.api.storage.flavors import SORT_KEYS
from moorage.api.storage.images import VISIBILITIES
from moorage.lifecycle.attributes import (
    METADATA_KEY_MAX,
    METADATA_VALUE_MAX,
    TAG_LENGTH_MAX,
    TAGS_MAX,
)
from moorage.lifecycle.server_groups import MAX_SERVER_PER_HOST
from moorage.model.image import CONTAINER_FORMATS, DISK_FORMATS
from moorage.scheduler.server_groups import HARD_POLICIES, GroupPolicy

Schema = dict[str, Any]

# The largest value of a database integer column (PostgreSQL's integer; a BigInteger's).
MAX_INT = 2**31 - 1
MAX_BIGINT = 2**63 - 1

# Text that is not only spaces: names, ids, reasons.
NOT_BLANK = r"\S"


def text(max_length: int = 255, *, nullable: bool = False) -> Schema:
    """A string of 1 to ``max_length`` characters, not blank (optionally null)."""
    return {"type": ["string", "null"] if nullable else "string", "minLength": 1,
            "maxLength": max_length, "pattern": NOT_BLANK,
            "description": f"1 to {max_length} characters, not blank"}


def integer(minimum: int = 0, maximum: int = MAX_INT, *, nullable: bool = False,
            empty: bool = False) -> Schema:
    """A whole number, or (as nova takes it) a string of the digits 0-9; ``empty``: the
    empty string too (nova's flavor swap)."""
    # As text, the bounds are the handler's to check, but for these: no more digits than
    # the maximum has, and a digit other than 0 where zero is not allowed.
    digits = "^[0-9]*[1-9][0-9]*$" if minimum >= 1 else "^[0-9]*$" if empty else "^[0-9]+$"
    return {"type": ["integer", "string", "null"] if nullable else ["integer", "string"],
            "minimum": minimum, "maximum": maximum, "pattern": digits,
            "maxLength": len(str(maximum)),
            "description": f"an integer from {minimum} to {maximum}, or its ASCII digits"}


# nova's boolean: JSON true/false or one of these words (any case nova lists).
BOOLEAN: Schema = {
    "type": ["boolean", "string"],
    "enum": [True, False, *sorted({spelling for word in TRUE_WORDS + FALSE_WORDS
                                   for spelling in (word, word.upper(), word.title())})],
    "description": "true or false (or one of the words nova takes for them: "
                   "yes, no, on, off, 1, 0...)",
}

# Extra spec values: strings (numbers are taken as their text), at most 255 characters.
EXTRA_SPECS: Schema = {
    "type": "object",
    "propertyNames": {"minLength": 1, "maxLength": 255},
    "additionalProperties": {"type": ["string", "number"], "maxLength": 255},
}


def choice(title: str, options: dict[str, Schema]) -> Schema:
    """An object with exactly one of ``options`` as its key (a server action, an
    aggregate action, what a plan is of); ``title`` names what the key is."""
    return {"type": "object", "title": title, "minProperties": 1, "maxProperties": 1,
            "properties": options, "additionalProperties": False}


def some_of(properties: dict[str, Schema], *, required: tuple[str, ...] = (),
            at_least_one: bool = False) -> Schema:
    """An object of these ``properties`` and no others."""
    schema: Schema = {"type": "object", "properties": properties,
                      "additionalProperties": False}
    if required:
        schema["required"] = list(required)
    if at_least_one:
        schema["minProperties"] = 1
    return schema


def wrapped(key: str, inner: Schema) -> Schema:
    """nova's envelope: ``{"flavor": {...}}``."""
    return some_of({key: inner}, required=(key,))


# -- flavors ---------------------------------------------------------------------

# nova's flavor description (2.55): printable text, empty allowed, or null.
_FLAVOR_DESCRIPTION: Schema = {
    "type": ["string", "null"], "maxLength": 65535,
    "pattern": "^[^\x00-\x1f\x7f-\x9f\u2028\u2029]*$",
    "description": "printable text of at most 65535 characters (no control "
                   "characters), or null; from microversion 2.55"}

FLAVOR = some_of({
    "name": text(),
    "id": {"type": ["string", "integer", "null"], "maxLength": 255,
           "pattern": r"^[a-zA-Z0-9._-]([a-zA-Z0-9. _-]*[a-zA-Z0-9._-])?$",
           "description": "1 to 255 of letters, digits, '.', ' ', '_' and '-', not "
                          "starting or ending with a space"},
    "ram": integer(1),
    "vcpus": integer(1),
    "disk": integer(0),
    "OS-FLV-EXT-DATA:ephemeral": integer(0, nullable=True),
    "swap": integer(0, nullable=True, empty=True),
    "rxtx_factor": {"type": "number", "exclusiveMinimum": 0},
    "os-flavor-access:is_public": BOOLEAN,
    "description": _FLAVOR_DESCRIPTION,
    "extra_specs": {**EXTRA_SPECS, "type": ["object", "null"]},
}, required=("name", "ram", "vcpus", "disk"))

FLAVOR_UPDATE = wrapped("flavor", some_of({"description": _FLAVOR_DESCRIPTION},
                                          required=("description",)))

# os-flavor-access: a project id as nova's flavor_projects column holds it.
_TENANT: Schema = {"type": "string", "minLength": 1, "maxLength": 255}
FLAVOR_ACTION = choice("action", {
    "addTenantAccess": some_of({"tenant": _TENANT}, required=("tenant",)),
    "removeTenantAccess": some_of({"tenant": _TENANT}, required=("tenant",)),
})

# -- images ----------------------------------------------------------------------

_IMAGE_FIELDS: dict[str, Schema] = {
    "name": text(),
    "disk_format": {"type": ["string", "null"], "enum": [*DISK_FORMATS, None]},
    "container_format": {"type": ["string", "null"], "enum": [*CONTAINER_FORMATS, None]},
    "min_disk": integer(0, nullable=True),
    "min_ram": integer(0, nullable=True),
    "visibility": {"type": "string", "enum": list(VISIBILITIES)},
}
_PROPERTY_VALUE: Schema = {"type": ["string", "number", "boolean"], "maxLength": 65535}
_PROPERTY_NAMES: Schema = {"minLength": 1, "maxLength": 255}

IMAGE = some_of({
    "id": text(36),
    **_IMAGE_FIELDS,
    "properties": {"type": ["object", "null"], "propertyNames": _PROPERTY_NAMES,
                   "additionalProperties": _PROPERTY_VALUE},
}, required=("name",))

# A JSON merge patch (RFC 7396): a property set to null is removed.
IMAGE_PATCH = some_of({
    **_IMAGE_FIELDS,
    "properties": {"type": ["object", "null"], "propertyNames": _PROPERTY_NAMES,
                   "additionalProperties": {**_PROPERTY_VALUE,
                                            "type": [*_PROPERTY_VALUE["type"], "null"]}},
})

# -- servers ---------------------------------------------------------------------

_BLOCK_DEVICE: Schema = {
    "type": "object",
    "properties": {
        "boot_index": {"type": ["integer", "string", "null"]},
        "source_type": {"type": "string", "enum": ["image", "volume", "snapshot", "blank"]},
        "destination_type": {"type": "string", "enum": ["volume", "local"]},
        "uuid": text(255),
        # nova's volume_size: an integer, or a string of digits (openstacksdk sends "1").
        "volume_size": {"type": ["integer", "string", "null"], "pattern": "^[0-9]+$",
                        "minimum": 1, "maximum": MAX_INT},
        "delete_on_termination": BOOLEAN,
    },
}

# A uuid, with or without its dashes (nova's format "uuid").
_UUID = "^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$"
# nova's parameter types, as far as Moorage checks them.
_IP_ADDRESS: Schema = {"type": "string", "anyOf": [{"format": "ipv4"}, {"format": "ipv6"}]}
_TAG: Schema = {"type": "string", "minLength": 1, "maxLength": TAG_LENGTH_MAX,
                "pattern": "^[^,/]*$",
                "description": f"1 to {TAG_LENGTH_MAX} characters, no ',' or '/'"}
_HOSTNAME: Schema = {"type": "string", "minLength": 2, "maxLength": 63,
                     "pattern": "^[a-zA-Z0-9]+[a-zA-Z0-9-]*[a-zA-Z0-9]+$",
                     "description": "a DNS label: letters, digits and '-'"}
_FQDN: Schema = {"type": "string", "minLength": 1, "maxLength": 255,
                 "pattern": "^[a-zA-Z0-9-._]*$",
                 "description": "a host name: letters, digits, '-', '.' and '_'"}
# nova's metadata: keys of letters, digits, '-', '_', ':', '.' and spaces (the key
# of a URL), values of text.
_METADATA: Schema = {
    "type": "object",
    "propertyNames": {"type": "string", "pattern": f"^[a-zA-Z0-9-_:. ]{{1,{METADATA_KEY_MAX}}}$",
                      "description": f"1 to {METADATA_KEY_MAX} letters, digits, '-', '_', "
                                     "':', '.' and spaces"},
    "additionalProperties": {"type": "string", "maxLength": METADATA_VALUE_MAX}}
_NETWORK: Schema = some_of({"fixed_ip": _IP_ADDRESS, "port": {"type": ["string", "null"]},
                            "uuid": {"type": "string"}, "tag": _TAG})
_HINTS: Schema = {"type": "object", "additionalProperties": True,
                  "properties": {"group": {
                      "type": "string", "pattern": _UUID,
                      "description": "the server group the server joins (its uuid)"}},
                  "description": "nova's scheduler hints (group, same_host, "
                                 "different_host, query...); stored and shown"}

# The server of POST /servers at the newest microversion; older ones drop what their
# version does not take (``server_create``).
SERVER = some_of({
    "name": text(),
    "flavorRef": text(),
    "imageRef": {"type": ["string", "null"], "maxLength": 255},
    "adminPass": {"type": "string"},
    "accessIPv4": {"type": "string", "format": "ipv4"},
    "accessIPv6": {"type": "string", "format": "ipv6"},
    "OS-DCF:diskConfig": {"type": "string", "enum": ["AUTO", "MANUAL"]},
    "availability_zone": text(nullable=True),
    "block_device_mapping": {"type": "array", "items": {"type": "object"}},
    "block_device_mapping_v2": {"type": "array", "items": _BLOCK_DEVICE, "maxItems": 64},
    "host": _FQDN,
    "hypervisor_hostname": _FQDN,
    "hostname": _FQDN,
    "networks": {"anyOf": [{"type": "string", "enum": ["auto", "none"]},
                           {"type": "array", "items": _NETWORK}]},
    "metadata": _METADATA,
    "key_name": text(),
    "security_groups": {"type": "array", "items": some_of({"name": text()})},
    "min_count": integer(1),
    "max_count": integer(1),
    "return_reservation_id": BOOLEAN,
    "description": {"type": ["string", "null"], "maxLength": 255},
    "tags": {"type": "array", "items": _TAG, "maxItems": TAGS_MAX},
    "trusted_image_certificates": {"type": ["array", "null"], "minItems": 1,
                                   "maxItems": 50, "uniqueItems": True,
                                   "items": {"type": "string", "minLength": 1}},
    "user_data": {"type": ["string", "null"], "maxLength": 65535},
    "config_drive": BOOLEAN,
    "personality": {"type": "array", "items": {"type": "object"}},
}, required=("name", "flavorRef"))

# What each microversion adds to (or takes from) the create body.
_SERVER_FIELD_GATES: dict[str, tuple[microversion.Gate, bool]] = {
    # field: (gate, True: accepted from it on / False: refused from it on)
    "description": (microversion.SERVER_DESCRIPTION, True),
    "tags": (microversion.SERVER_CREATE_TAGS, True),
    "personality": (microversion.SERVER_NO_PERSONALITY, False),
    "trusted_image_certificates": (microversion.SERVER_TRUSTED_CERTS, True),
    "host": (microversion.SERVER_CREATE_HOST, True),
    "hypervisor_hostname": (microversion.SERVER_CREATE_HOST, True),
    "hostname": (microversion.SERVER_HOSTNAME, True),
}


@functools.cache
def server_create(version: microversion.Version) -> Schema:
    """POST /servers' body as ``version`` takes it."""
    server = copy.deepcopy(SERVER)
    fields = server["properties"]
    for name, (gate, added) in _SERVER_FIELD_GATES.items():
        if microversion.at(version, gate) != added:
            del fields[name]
    if "hostname" in fields and not microversion.at(version, microversion.SERVER_HOSTNAME_FQDN):
        fields["hostname"] = _HOSTNAME
    if microversion.at(version, microversion.SERVER_NETWORKS_REQUIRED):
        server["required"] = [*server["required"], "networks"]
    else:  # a list only, of any uuid
        fields["networks"] = {"type": "array", "items": _NETWORK}
    hints = {"os:scheduler_hints": _HINTS, "OS-SCH-HNT:scheduler_hints": _HINTS}
    return some_of({"server": server, **hints}, required=("server",))


@functools.cache
def server_update(version: microversion.Version) -> Schema:
    """PUT /servers/{id}'s body as ``version`` takes it."""
    fields: dict[str, Schema] = {
        "name": text(), "accessIPv4": SERVER["properties"]["accessIPv4"],
        "accessIPv6": SERVER["properties"]["accessIPv6"],
        "OS-DCF:diskConfig": SERVER["properties"]["OS-DCF:diskConfig"]}
    if microversion.at(version, microversion.SERVER_DESCRIPTION):
        fields["description"] = SERVER["properties"]["description"]
    if microversion.at(version, microversion.SERVER_HOSTNAME):
        fields["hostname"] = (_FQDN if microversion.at(
            version, microversion.SERVER_HOSTNAME_FQDN) else _HOSTNAME)
    return wrapped("server", some_of(fields))


# /servers/{id}/metadata (POST merges, PUT replaces) and /metadata/{key} (PUT: that key).
SERVER_METADATA = wrapped("metadata", _METADATA)
SERVER_METADATA_ITEM = wrapped("meta", {
    **_METADATA, "minProperties": 1, "maxProperties": 1,
    "description": "exactly one item, {key: value}, the key of the URL"})
# /servers/{id}/tags (PUT) and /tags/{tag} (PUT, which takes no body, or null).
SERVER_TAGS = wrapped("tags", {"type": "array", "items": _TAG, "maxItems": TAGS_MAX})
NO_BODY: Schema = {"type": "null", "description": "no body (or null)"}


@functools.cache
def server_tags(version: microversion.Version) -> Schema:
    """PUT /servers/{id}/tags' body; before 2.26 the route is not there (the handler's
    404), so any body passes."""
    return SERVER_TAGS if microversion.at(version, microversion.SERVER_TAGS) else {}


@functools.cache
def image_metadata(version: microversion.Version) -> Schema:
    """POST and PUT /images/{id}/metadata's body (the server metadata's); from 2.39 the
    route is not there (the handler's 404), so any body passes."""
    return {} if microversion.at(version, microversion.IMAGE_METADATA_REMOVED) else (
        SERVER_METADATA)


@functools.cache
def image_metadata_item(version: microversion.Version) -> Schema:
    """PUT /images/{id}/metadata/{key}'s body, as ``image_metadata``."""
    return {} if microversion.at(version, microversion.IMAGE_METADATA_REMOVED) else (
        SERVER_METADATA_ITEM)


# The argument of an action Moorage reads some of; what else nova's clients send along
# (adminPass, OS-DCF:diskConfig, preserve_ephemeral...) is let through.
_IMAGE_REF: Schema = {"type": "string", "minLength": 1, "maxLength": 255}
_FLAVOR_REF: Schema = {"type": ["string", "integer"], "minLength": 1, "maxLength": 255}
_HOST: Schema = text(nullable=True)

SERVER_ACTION = choice("action", {
    # What a rebuild applies besides the image (handlers/servers.py _rebuilt), typed
    # (preserve_ephemeral too, unread: Moorage's guests have no ephemeral disk); nova's
    # older fields (personality...) pass unread.
    "rebuild": {"type": "object", "required": ["imageRef"], "properties": {
        "imageRef": _IMAGE_REF, "name": text(), "metadata": _METADATA,
        **{name: SERVER["properties"][name] for name in (
            "adminPass", "accessIPv4", "accessIPv6", "OS-DCF:diskConfig", "description",
            "user_data")},
        "key_name": text(nullable=True), "hostname": _FQDN,
        "preserve_ephemeral": BOOLEAN}},
    "resize": {"type": "object", "required": ["flavorRef"],
               "properties": {"flavorRef": _FLAVOR_REF}},
    "migrate": {"type": ["object", "null"], "properties": {"host": _HOST}},
    "confirmResize": {"type": ["object", "null"]},
    "revertResize": {"type": ["object", "null"]},
    "evacuate": {"type": ["object", "null"], "properties": {"host": _HOST}},
    # nova takes any value for these four (null by convention).
    "os-stop": {}, "os-start": {}, "lock": {}, "unlock": {},
    "reboot": some_of({"type": {
        "type": "string", "enum": ["HARD", "Hard", "hard", "SOFT", "Soft", "soft"],
        "description": "HARD, SOFT (or Hard, hard, Soft, soft)"}}, required=("type",)),
    "os-resetState": some_of({"state": {"type": "string", "enum": ["active", "error"]}},
                             required=("state",)),
    "addSecurityGroup": some_of({"name": text()}, required=("name",)),
    "removeSecurityGroup": some_of({"name": text()}, required=("name",)),
    "restore": {}, "forceDelete": {},
    "os-getConsoleOutput": some_of({"length": {
        "type": ["integer", "string", "null"], "pattern": "^-?[0-9]+$", "minimum": -1,
        "description": "an integer of -1 or more (-1: every line)"}}),
})

# The dry run: a boot (the server of POST /servers), a resize or a migration.
_SERVER_ID = text(36)
PLAN = choice("operation", {
    "server": SERVER,
    "resize": some_of({"server_id": _SERVER_ID, "flavorRef": _FLAVOR_REF},
                      required=("server_id", "flavorRef")),
    "migrate": some_of({"server_id": _SERVER_ID, "host": _HOST}, required=("server_id",)),
})

# -- key pairs -------------------------------------------------------------------

# nova's key pair names: letters, digits, '_', '-' and spaces, not at either end; from
# 2.92 also '@' and '.'.
_KEYPAIR_NAME: Schema = {
    "type": "string", "minLength": 1, "maxLength": 255,
    "pattern": r"^[_\-a-zA-Z0-9]([_\- a-zA-Z0-9]*[_\-a-zA-Z0-9])?$",
    "description": "1 to 255 letters, digits, '_', '-' and spaces, not starting or "
                   "ending with a space"}
_KEYPAIR_NAME_V292: Schema = {
    **_KEYPAIR_NAME,
    "pattern": r"^[_\-@.a-zA-Z0-9]([_\-@. a-zA-Z0-9]*[_\-@.a-zA-Z0-9])?$",
    "description": "1 to 255 letters, digits, '_', '-', '@', '.' and spaces, not "
                   "starting or ending with a space"}


@functools.cache
def keypair_create(version: microversion.Version) -> Schema:
    """POST /os-keypairs' body as ``version`` takes it: a name and a public key to import
    (to generate one, no public key: before 2.92 only), a type from 2.2, an admin's
    user_id from 2.10."""
    fields: dict[str, Schema] = {"name": _KEYPAIR_NAME, "public_key": {"type": "string"}}
    required: tuple[str, ...] = ("name",)
    if microversion.at(version, microversion.KEYPAIR_TYPE):
        fields["type"] = {"type": "string", "enum": ["ssh", "x509"]}
    if microversion.at(version, microversion.KEYPAIR_USER):
        # nova sets no bound; the column holds 255 characters (a 400, not a 500).
        fields["user_id"] = {"type": "string", "maxLength": 255}
    if microversion.at(version, microversion.KEYPAIR_IMPORT_ONLY):
        fields["name"] = _KEYPAIR_NAME_V292
        required = ("name", "public_key")
    return wrapped("keypair", some_of(fields, required=required))


# -- server groups ----------------------------------------------------------------

def _group_policies(version: microversion.Version) -> list[str]:
    soft = microversion.at(version, microversion.SERVER_GROUP_SOFT_POLICIES)
    return [str(p) for p in (GroupPolicy if soft else HARD_POLICIES)]


@functools.cache
def server_group_create(version: microversion.Version) -> Schema:
    """POST /os-server-groups' body as ``version`` takes it: a name and a list of one
    policy (affinity, anti-affinity; the soft ones from 2.15), or from 2.64 one
    ``policy`` and its ``rules`` (max_server_per_host, a positive integer)."""
    fields: dict[str, Schema] = {"name": text()}
    if microversion.at(version, microversion.SERVER_GROUP_POLICY_RULES):
        fields["policy"] = {"type": "string", "enum": _group_policies(version)}
        fields["rules"] = some_of({MAX_SERVER_PER_HOST: integer(1)})
        required: tuple[str, ...] = ("name", "policy")
    else:
        fields["policies"] = {
            "type": "array", "minItems": 1, "maxItems": 1, "uniqueItems": True,
            "prefixItems": [{"type": "string", "enum": _group_policies(version)}],
            "description": "a list of exactly one policy"}
        required = ("name", "policies")
    return wrapped("server_group", some_of(fields, required=required))


# -- services, aggregates, heartbeats ---------------------------------------------

# PUT /os-services/{service_id} takes one body per era of nova's API. Before 2.53 the path
# names an action (enable, disable, disable-log-reason; force-down from 2.11) and the body
# the service, by host and binary; from 2.53 the path names the service (its uuid) and the
# body what changes. The handler holds a body to its version's schema (400 naming the
# field nova refuses there); dispatch checks, and /openapi.json shows, the union.
_SERVICE_HOST: Schema = {"type": "string", "minLength": 1, "maxLength": 255,
                         "pattern": "^[a-zA-Z0-9-._]*$",
                         "description": "a host name: 1 to 255 letters, digits, '-', '.', '_'"}
_SERVICE_NAMED: dict[str, Schema] = {"host": _SERVICE_HOST, "binary": text(),
                                     "disabled_reason": text()}
SERVICE_ACTION_V2_1 = some_of(_SERVICE_NAMED, required=("host", "binary"))
SERVICE_ACTION_V2_11 = some_of({**_SERVICE_NAMED, "forced_down": BOOLEAN},
                               required=("host", "binary"))
SERVICE_UPDATE_V2_53 = some_of({
    "status": {"type": "string", "enum": ["enabled", "disabled"]},
    "disabled_reason": text(nullable=True),
    "forced_down": BOOLEAN,
})
SERVICE_UPDATE = some_of({**SERVICE_ACTION_V2_11["properties"],
                          **SERVICE_UPDATE_V2_53["properties"]})
SERVICE_UPDATE["description"] = (
    "Before microversion 2.53: host and binary (and disabled_reason for "
    "disable-log-reason, forced_down for force-down from 2.11). From 2.53: status, "
    "disabled_reason, forced_down.")

_AGGREGATE_FIELDS: dict[str, Schema] = {
    "name": text(),
    "availability_zone": text(nullable=True),
}

AGGREGATE_ACTION = choice("action", {
    "add_host": some_of({"host": text()}, required=("host",)),
    "remove_host": some_of({"host": text()}, required=("host",)),
    "set_metadata": some_of({"metadata": {
        "type": "object", "propertyNames": {"minLength": 1, "maxLength": 255},
        "additionalProperties": {"type": ["string", "null"], "maxLength": 255}}},
        required=("metadata",)),
})

# Traits a node may say it refuses, at most: every family an image property names.
MAX_REFUSED = 1000
# What an agent reports of its host (the host is in the URL, or beside it in a fleet's).
_HEARTBEAT_FIELDS: dict[str, Schema] = {
    "binary": text(),
    "driver": text(64),
    "nodes": {"type": "array", "items": text()},
    "agent_url": text(),
    "supported_instances": {"type": ["array", "null"], "items": {
        "type": "array", "items": {"type": "string", "maxLength": 255},
        "minItems": 3, "maxItems": 3}},
    "hypervisor_version": {"type": ["integer", "null"], "minimum": 0,
                           "maximum": MAX_BIGINT},
    "version": text(64, nullable=True),
    # node -> the traits its driver reports unsupported (compute.traits.refused)
    "refused": {"type": ["object", "null"], "additionalProperties": {
        "type": "array", "maxItems": MAX_REFUSED, "items": text()}},
}
HEARTBEAT = some_of(_HEARTBEAT_FIELDS, required=("driver", "nodes"))

# Hosts one fleet heartbeat may carry, full reports and "alive" together.
MAX_HEARTBEATS = 5000
FLEET_HEARTBEAT = some_of({
    "services": {"type": ["array", "null"], "maxItems": MAX_HEARTBEATS,
                 "items": some_of({"host": text(), **_HEARTBEAT_FIELDS},
                                  required=("host", "driver", "nodes"))},
    "alive": {"type": ["array", "null"], "maxItems": MAX_HEARTBEATS, "items": text()},
})

# -- quotas ----------------------------------------------------------------------

# nova's quota limit: -1 (unlimited) or more, maybe as digits.
_QUOTA_LIMIT: Schema = {
    "type": ["integer", "string"], "pattern": "^-?[0-9]+$", "minimum": -1,
    "maximum": MAX_INT, "maxLength": 11,
    "description": f"-1 (unlimited) or an integer up to {MAX_INT}, or its digits"}


def quota_set_update(version: microversion.Version) -> Schema:
    """PUT /os-quota-sets/{project_id}'s body at ``version``: the resources it shows,
    and force (set below what is in use)."""
    fields = {str(resource): _QUOTA_LIMIT for resource in quota_resources.shown(version)}
    return wrapped("quota_set", some_of({**fields, "force": BOOLEAN}))


def quota_class_set_update(version: microversion.Version) -> Schema:
    """PUT /os-quota-class-sets/{id}'s body at ``version``."""
    fields = {str(resource): _QUOTA_LIMIT
              for resource in quota_resources.class_shown(version)}
    return wrapped("quota_class_set", some_of(fields))


# nova's bodies for attaching a port or a volume: valid ones reach the handler, which
# refuses them (Moorage has no network or volume service: server_attachments).
_UUID_TEXT: Schema = {"type": "string", "pattern": _UUID, "description": "a uuid"}
INTERFACE_ATTACH = wrapped("interfaceAttachment", some_of({
    "net_id": _UUID_TEXT, "port_id": _UUID_TEXT, "tag": _TAG,
    "fixed_ips": {"type": "array", "maxItems": 1, "items": some_of(
        {"ip_address": _IP_ADDRESS}, required=("ip_address",))}}))
VOLUME_ATTACH = wrapped("volumeAttachment", some_of({
    "volumeId": _UUID_TEXT, "device": {"type": ["string", "null"]}, "tag": _TAG,
    "delete_on_termination": BOOLEAN}, required=("volumeId",)))


# -- by handler (the operationId of /openapi.json) ----------------------------------
# The newest version's body; a handler in VERSIONED takes the asked version's.

REQUEST_SCHEMAS: dict[str, Schema] = {
    "create_flavor": wrapped("flavor", FLAVOR),
    "update_flavor": FLAVOR_UPDATE,
    "flavor_action": FLAVOR_ACTION,
    "create_extra_specs": wrapped("extra_specs", {**EXTRA_SPECS, "minProperties": 1}),
    "update_extra_spec": {**EXTRA_SPECS, "description": "{key: value}, the key of the URL"},
    "create_image": IMAGE,
    "update_image": IMAGE_PATCH,
    "create_server": server_create(microversion.MAX_VERSION),
    "update_server": server_update(microversion.MAX_VERSION),
    "server_action": SERVER_ACTION,
    "create_server_metadata": SERVER_METADATA,
    "replace_server_metadata": SERVER_METADATA,
    "update_server_metadata_item": SERVER_METADATA_ITEM,
    # Before 2.39 (VERSIONED: any body after).
    "create_image_metadata": SERVER_METADATA,
    "replace_image_metadata": SERVER_METADATA,
    "update_image_metadata_item": SERVER_METADATA_ITEM,
    "replace_server_tags": server_tags(microversion.MAX_VERSION),
    "add_server_tag": NO_BODY,
    "plan": PLAN,
    "update_service": SERVICE_UPDATE,
    "create_aggregate": wrapped("aggregate", some_of(_AGGREGATE_FIELDS, required=("name",))),
    "update_aggregate": wrapped("aggregate", some_of(_AGGREGATE_FIELDS, at_least_one=True)),
    "aggregate_action": AGGREGATE_ACTION,
    "heartbeat": HEARTBEAT,
    "heartbeats": FLEET_HEARTBEAT,
    "create_keypair": keypair_create(microversion.MAX_VERSION),
    "create_server_group": server_group_create(microversion.MAX_VERSION),
    "update_quota_set": quota_set_update(microversion.MAX_VERSION),
    "update_quota_class_set": quota_class_set_update(microversion.MAX_VERSION),
    "attach_interface": INTERFACE_ATTACH,
    "attach_volume": VOLUME_ATTACH,
}


# -- query strings ------------------------------------------------------------------
# Documented (and so fuzzed) by name; the handlers parse them, each refusal a 400.

_QUERY_TEXT: Schema = {"type": "string"}
# Every parameter nova's newest schema knows (moorage.api.server_query reads them).
_SERVER_LIST_QUERY: dict[str, Schema] = {
    **{name: _QUERY_TEXT for name in sorted(server_query.known(microversion.MAX_VERSION))},
    "limit": {"type": "integer", "minimum": 0},
    "status": {"type": "string", "enum": sorted(server_query.NOVA_STATUSES)},
    "sort_key": {"type": "string",
                 "enum": sorted(server_query.sort_keys(microversion.MAX_VERSION))},
    "sort_dir": {"type": "string", "enum": ["asc", "desc"]},
    "changes-since": {"type": "string", "format": "date-time"},
    "changes-before": {"type": "string", "format": "date-time"},
}
# os-hypervisors: limit and marker from 2.33; the name pattern and with_servers from 2.53.
_QUERY_BOOLEAN: Schema = {"type": "string", "enum": sorted(
    {spelling for spelling in BOOLEAN["enum"] if isinstance(spelling, str)})}
_HYPERVISOR_LIST_QUERY: dict[str, Schema] = {
    "limit": {"type": "integer", "minimum": 0}, "marker": _QUERY_TEXT,
    "hypervisor_hostname_pattern": {"type": "string", "pattern": "^[a-zA-Z0-9-._]+$"},
    "with_servers": _QUERY_BOOLEAN,
}
_FLAVOR_LIST_QUERY: dict[str, Schema] = {
    "minRam": {"type": "integer", "minimum": 0, "maximum": MAX_INT},
    "minDisk": {"type": "integer", "minimum": 0, "maximum": MAX_INT},
    "is_public": {"type": "string", "enum": ["true", "false", "none"]},
    "sort_key": {"type": "string", "enum": list(SORT_KEYS)},
    "sort_dir": {"type": "string", "enum": ["asc", "desc"]},
    "limit": {"type": "integer", "minimum": 0}, "marker": _QUERY_TEXT}

_TENANT_USAGE_QUERY: dict[str, Schema] = {
    "start": _QUERY_TEXT, "end": _QUERY_TEXT, "detailed": _QUERY_TEXT,
    "limit": {"type": "integer", "minimum": 0}, "marker": _QUERY_TEXT}

QUERY_PARAMETERS: dict[str, dict[str, Schema]] = {
    "list_flavors": _FLAVOR_LIST_QUERY,
    "list_flavors_detail": _FLAVOR_LIST_QUERY,
    "list_servers": _SERVER_LIST_QUERY,
    "list_servers_detail": _SERVER_LIST_QUERY,
    # Read as nova's os-migrations reads them: paging from 2.59, changes-before from
    # 2.66, user_id and project_id from 2.80 (moorage.api.handlers.migrations).
    "list_migrations": {
        "instance_uuid": _QUERY_TEXT, "migration_type": _QUERY_TEXT, "status": _QUERY_TEXT,
        "host": _QUERY_TEXT, "source_compute": _QUERY_TEXT, "hidden": _QUERY_TEXT,
        "limit": {"type": "integer", "minimum": 0}, "marker": _QUERY_TEXT,
        "changes-since": {"type": "string", "format": "date-time"},
        "changes-before": {"type": "string", "format": "date-time"},
        "user_id": _QUERY_TEXT, "project_id": _QUERY_TEXT},
    # Paging from 2.58, changes-before from 2.66 (moorage.api.handlers.instance_actions).
    "list_instance_actions": {
        "limit": {"type": "integer", "minimum": 0}, "marker": _QUERY_TEXT,
        "changes-since": {"type": "string", "format": "date-time"},
        "changes-before": {"type": "string", "format": "date-time"}},
    "list_services": {"host": _QUERY_TEXT, "binary": _QUERY_TEXT},
    "list_hypervisors": _HYPERVISOR_LIST_QUERY,
    "list_hypervisors_detail": _HYPERVISOR_LIST_QUERY,
    "show_hypervisor": {"with_servers": _QUERY_BOOLEAN},
    "list_keypairs": {"user_id": _QUERY_TEXT, "limit": {"type": "integer", "minimum": 0},
                      "marker": _QUERY_TEXT},
    "show_keypair": {"user_id": _QUERY_TEXT},
    "list_server_groups": {"all_projects": _QUERY_TEXT,
                           "limit": {"type": "integer", "minimum": 0},
                           "offset": {"type": "integer", "minimum": 0}},
    "show_quota_set": {"user_id": _QUERY_TEXT},
    "show_quota_set_detail": {"user_id": _QUERY_TEXT},
    "show_limits": {"tenant_id": _QUERY_TEXT},
    "list_tenant_usages": _TENANT_USAGE_QUERY,
    "show_tenant_usage": _TENANT_USAGE_QUERY,
}


# The bodies that change with the microversion: handler -> the schema of a version.
VERSIONED: dict[str, Callable[[microversion.Version], Schema]] = {
    "create_server": server_create, "update_server": server_update,
    "replace_server_tags": server_tags, "create_keypair": keypair_create,
    "create_server_group": server_group_create,
    "update_quota_set": quota_set_update, "update_quota_class_set": quota_class_set_update,
    "create_image_metadata": image_metadata, "replace_image_metadata": image_metadata,
    "update_image_metadata_item": image_metadata_item}
