"""Compute API microversions, negotiated as nova negotiates them, and the one table of
what each version changes.

Negotiation (nova's ``wsgi.Request.set_api_version_request``):
- ``OpenStack-API-Version: compute X.Y`` is read first (the header may name several
  services, ``placement 1.2, compute 2.60``; the last ``compute`` entry wins), then the
  legacy ``X-OpenStack-Nova-API-Version: X.Y``. No header means 2.1, the minimum;
  ``latest`` means the maximum.
- A value that is not ``X.Y`` of plain digits is a 400; a version outside 2.1 to the
  maximum is a 406. Both name the range.
- Every answer under /v2.1 says the version it was made for in both headers, with
  ``Vary`` on both, so a cache keeps one answer per version.

Why one table: a handler never compares version numbers; it asks whether its request is
past a named gate (``req.at(FLAVOR_DESCRIPTION)``). The gates below are the whole list of
behaviour that depends on the version, /openapi.json publishes them, and a test holds
each one to a request whose answer changes at it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

SERVICE_TYPE = "compute"
HEADER = "OpenStack-API-Version"
LEGACY_HEADER = "X-OpenStack-Nova-API-Version"
_ENVIRON = "HTTP_OPENSTACK_API_VERSION"
_LEGACY_ENVIRON = "HTTP_X_OPENSTACK_NOVA_API_VERSION"
# Not a version: the header by which a client asks for Moorage's additions to nova's
# bodies (``Moorage-Additions: 1``; moorage.api.server_view says which and why).
ADDITIONS_HEADER = "Moorage-Additions"
_FORMAT = re.compile(r"^([1-9][0-9]*)\.([1-9][0-9]*|0)$")


class Version(NamedTuple):
    """A microversion; tuples compare, so versions order as numbers do (2.9 < 2.10)."""

    major: int
    minor: int

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"

    @classmethod
    def of(cls, text: str) -> Version:
        """``"2.55"`` as a Version; ValueError when it is not X.Y of digits."""
        found = _FORMAT.match(text)
        if found is None:
            raise ValueError(text)
        return cls(int(found[1]), int(found[2]))


MIN_VERSION = Version(2, 1)
# The newest microversion of nova 2025.1 Epoxy and 2025.2 Flamingo.
MAX_VERSION = Version(2, 100)


class MicroversionError(Exception):
    """The version asked for is malformed (400) or not served (406)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def parse(text: str) -> Version:
    """The version ``text`` asks for (``"2.60"`` or ``"latest"``), within the range."""
    value = text.strip()
    if value.lower() == "latest":
        return MAX_VERSION
    try:
        version = Version.of(value)
    except ValueError:
        raise MicroversionError(
            400, f"API Version String {value} is of invalid format. Must be of format "
                 "MajorNum.MinorNum.") from None
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise MicroversionError(
            406, f"Version {version} is not supported by the API. Minimum is "
                 f"{MIN_VERSION} and maximum is {MAX_VERSION}.")
    return version


def requested(environ: Mapping[str, object]) -> Version:
    """The version a WSGI request asks for (the rules above)."""
    header = environ.get(_ENVIRON)
    legacy = environ.get(_LEGACY_ENVIRON)
    for name, sent in ((HEADER, header), (LEGACY_HEADER, legacy)):
        if isinstance(sent, str) and not sent.strip():
            # A value with bytes beyond ASCII (digits such as "٣" sent raw) reaches the
            # application empty under Granian: refused, not read as no header (2.1).
            raise MicroversionError(
                400, f"The {name} header is empty or not ASCII: give the version "
                     "as X.Y (2.1 to the newest) or latest.")
    if isinstance(header, str):
        asked: str | None = None
        for entry in header.split(","):
            parts = entry.strip().split(None, 1)
            if len(parts) == 2 and parts[0].lower() == SERVICE_TYPE:
                asked = parts[1]
        if asked is not None:
            return parse(asked)
    if isinstance(legacy, str):
        return parse(legacy)
    return MIN_VERSION


def response_headers(version: Version) -> list[tuple[str, str]]:
    """What every answer under /v2.1 carries about its version."""
    return [(HEADER, f"{SERVICE_TYPE} {version}"), (LEGACY_HEADER, str(version)),
            ("Vary", f"{HEADER}, {LEGACY_HEADER}")]


# -- the gates -------------------------------------------------------------------------

@dataclass(frozen=True)
class Gate:
    """From ``version`` on, ``resource`` behaves as ``change`` says."""

    version: Version
    resource: str
    change: str


GATES: list[Gate] = []


def _gate(version: str, resource: str, change: str) -> Gate:
    gate = Gate(Version.of(version), resource, change)
    GATES.append(gate)
    return gate


# Flavors
FLAVOR_ACCESS_PUBLIC_REFUSED = _gate("2.7", "os-flavor-access", "giving a project access "
                                     "to a public flavor is a 409")
FLAVOR_DESCRIPTION = _gate("2.55", "flavors", "flavors carry a description, set at create "
                           "and by PUT /flavors/{id}")
FLAVOR_EXTRA_SPECS = _gate("2.61", "flavors", "flavors carry their extra_specs (when "
                           "policy lets the caller read them)")
SWAP_ZERO = _gate("2.75", "flavors", "a flavor without swap says 0, not \"\"")
FLAVOR_LIST_STRICT_QUERY = _gate("2.75", "flavors", "flavor lists refuse a query "
                                 "parameter they do not know (400)")

# Servers
SERVER_EXTENDED_ATTRIBUTES = _gate("2.3", "servers", "admins see reservation_id, "
                                   "launch_index, hostname, kernel_id, ramdisk_id, "
                                   "root_device_name and user_data")
SERVER_LOCKED = _gate("2.9", "servers", "servers say whether they are locked")
SERVER_HOST_STATUS = _gate("2.16", "servers", "servers carry host_status (by policy)")
SERVER_DESCRIPTION = _gate("2.19", "servers", "servers carry a description")
SERVER_TAGS = _gate("2.26", "servers", "servers carry their tags, which "
                    "/servers/{id}/tags[/{tag}] lists, checks, sets and deletes")
SERVER_NETWORKS_REQUIRED = _gate("2.37", "servers", "a create names its networks: "
                                 "\"auto\", \"none\" or a list")
SERVER_FLAVOR_EMBEDDED = _gate("2.47", "servers", "a server's flavor is its copy "
                               "(vcpus, ram, disk, ephemeral, swap, original_name, "
                               "extra_specs), not a link")
SERVER_CREATE_TAGS = _gate("2.52", "servers", "a create may give tags")
REBUILD_KEY_NAME = _gate("2.54", "servers", "a rebuild may set or remove the key pair, "
                         "and its answer shows key_name")
REBUILD_USER_DATA = _gate("2.57", "servers", "a rebuild may replace the user data, and its "
                          "answer shows user_data")
SERVER_NO_PERSONALITY = _gate("2.57", "servers", "a create may no longer give "
                              "personality files")
SERVER_TRUSTED_CERTS = _gate("2.63", "servers", "servers carry "
                             "trusted_image_certificates")
SERVER_GROUPS_SHOWN = _gate("2.71", "servers", "a shown server names its server_groups")
SERVER_LOCKED_REASON = _gate("2.73", "servers", "servers carry locked_reason")
SERVER_CREATE_HOST = _gate("2.74", "servers", "an admin's create may name a host or "
                           "hypervisor_hostname")
SERVER_CONSISTENT_BODIES = _gate("2.75", "servers", "PUT /servers/{id} answers the "
                                 "whole server, as GET does")
SERVER_HOSTNAME = _gate("2.90", "servers", "a create or update may set the hostname, "
                        "and OS-EXT-SRV-ATTR:hostname is shown to every reader")
SERVER_HOSTNAME_FQDN = _gate("2.94", "servers", "a hostname may be a fully qualified "
                             "domain name")
SERVER_PINNED_ZONE = _gate("2.96", "servers", "servers carry pinned_availability_zone")
SERVER_IMAGE_PROPERTIES = _gate("2.98", "servers", "a server's image carries its "
                                "properties")
SERVER_SCHEDULER_HINTS = _gate("2.100", "servers", "servers carry the scheduler_hints "
                               "they were created with")

# Instance actions (/servers/{id}/os-instance-actions)
ACTIONS_OF_DELETED = _gate("2.21", "os-instance-actions", "the actions of a deleted "
                           "server can still be read")
ACTION_EVENTS_SHOWN = _gate("2.51", "os-instance-actions", "an action's events are shown "
                            "to whoever may read it; their traceback only by policy")
ACTION_PAGING = _gate("2.58", "os-instance-actions", "actions carry updated_at; limit, "
                      "marker (a request id) and changes-since page the list (links), "
                      "and a query parameter not known is a 400")
ACTION_EVENT_HOSTS = _gate("2.62", "os-instance-actions", "events carry hostId, and "
                           "host by policy")
ACTION_CHANGES_BEFORE = _gate("2.66", "os-instance-actions", "changes-before filters "
                              "actions")
ACTION_EVENT_DETAILS = _gate("2.84", "os-instance-actions", "events carry details (what "
                             "failed), by policy")

# Server lists (GET /servers, /servers/detail): what users may filter and sort on
SERVER_LIST_IP6 = _gate("2.5", "server lists", "users may filter on ip6 (no server "
                        "has an address here: nothing matches)")
SERVER_LIST_TAGS = _gate("2.26", "server lists", "tags, tags-any, not-tags and "
                         "not-tags-any filter on tags (a comma-separated list each)")
SERVER_LIST_BAD_STATUS = _gate("2.38", "server lists", "a status filter that names no "
                               "status is a 400, not an empty list")
SERVER_LIST_CHANGES_BEFORE = _gate("2.66", "server lists", "changes-before filters on "
                                   "the last change, as changes-since does")
SERVER_LIST_LOCKED = _gate("2.73", "server lists", "locked filters and sorts")
SERVER_LIST_STRICT = _gate("2.75", "server lists", "a query parameter nova does not "
                           "know, or a sort key it used to ignore, is a 400")
SERVER_LIST_MORE_FILTERS = _gate("2.83", "server lists", "users may filter on "
                                 "availability_zone, config_drive, key_name, created_at, "
                                 "launched_at, terminated_at, power_state, task_state, "
                                 "vm_state, progress and user_id")
SERVER_LIST_HOSTNAME = _gate("2.90", "server lists", "users may filter on hostname")

# Services and hypervisors
SERVICE_FORCED_DOWN = _gate("2.11", "os-services", "services carry forced_down")
HYPERVISOR_CPU_INFO_OBJECT = _gate("2.28", "os-hypervisors", "cpu_info is an object, "
                                   "not its JSON text")
HYPERVISOR_PAGING = _gate("2.33", "os-hypervisors", "limit and marker page hypervisor "
                          "lists")
SERVICE_UUIDS = _gate("2.53", "os-services, os-hypervisors", "services and hypervisors "
                      "are named by uuid; PUT /os-services/{id} replaces the "
                      "enable/disable/force-down routes; hypervisor search and servers "
                      "move to query parameters, and os-hypervisors refuses any other")
HYPERVISOR_SERVERS_ALWAYS = _gate("2.75", "os-hypervisors", "with_servers answers a "
                                  "servers list even when it is empty")
SERVICE_QUERY_STRICT = _gate("2.75", "os-services", "a query parameter other than host "
                             "and binary is a 400")
HYPERVISOR_NO_STATISTICS = _gate("2.88", "os-hypervisors", "no usage fields; uptime "
                                 "joins the hypervisor; /statistics and /uptime are gone")

# Migrations and aggregates
MIGRATION_TYPE = _gate("2.23", "os-migrations", "migrations carry migration_type")
SERVER_MIGRATIONS = _gate("2.23", "servers/{id}/migrations", "lists the server's "
                          "live migrations in progress (none: Moorage makes none)")
MIGRATION_PAGING = _gate("2.59", "os-migrations", "migrations carry uuid and are listed "
                         "newest first, limit, marker and changes-since page them "
                         "(migrations_links), and a query parameter not known is a 400")
MIGRATION_CHANGES_BEFORE = _gate("2.66", "os-migrations", "changes-before filters "
                                 "migrations")
MIGRATION_OWNER = _gate("2.80", "os-migrations", "migrations carry user_id and "
                        "project_id, and can be filtered by them")
AGGREGATE_UUID = _gate("2.41", "os-aggregates", "aggregates carry their uuid")

# Server groups
SERVER_GROUP_OWNER = _gate("2.13", "os-server-groups", "server groups carry project_id "
                           "and user_id")
SERVER_GROUP_SOFT_POLICIES = _gate("2.15", "os-server-groups", "a group's policy may be "
                                   "soft-affinity or soft-anti-affinity")
SERVER_GROUP_POLICY_RULES = _gate("2.64", "os-server-groups", "a group has one policy "
                                  "(not a policies list) and rules (anti-affinity's "
                                  "max_server_per_host); no metadata")
SERVER_GROUP_STRICT_QUERY = _gate("2.75", "os-server-groups", "a list refuses a query "
                                  "parameter other than all_projects, limit and offset "
                                  "(400)")

# Images (nova's proxy of the image service)
IMAGE_PROXY_REMOVED = _gate("2.36", "images", "GET /images, /images/detail and "
                            "/images/{id} are gone (404): ask the image service")
IMAGE_METADATA_REMOVED = _gate("2.39", "images/{id}/metadata", "an image's metadata "
                               "(its properties) is gone (404): ask the image service")

# Key pairs
KEYPAIR_TYPE = _gate("2.2", "os-keypairs", "key pairs carry their type (ssh or x509, "
                     "chosen at create); a create answers 201, a delete 204")
KEYPAIR_USER = _gate("2.10", "os-keypairs", "an admin names the user whose key pairs "
                     "are listed, shown or deleted (?user_id=) or created (user_id)")
KEYPAIR_PAGING = _gate("2.35", "os-keypairs", "limit and marker page the list by name, "
                       "with keypairs_links")
KEYPAIR_STRICT_QUERY = _gate("2.75", "os-keypairs", "a query parameter the route does "
                             "not take is a 400")
KEYPAIR_IMPORT_ONLY = _gate("2.92", "os-keypairs", "a create gives the public key (no "
                            "more generated keys); names may also hold '@' and '.'")

# Quotas and limits
QUOTA_NO_NETWORK = _gate("2.36", "os-quota-sets, limits", "the nova-network resources "
                         "(fixed_ips, floating_ips, security_groups, security_group_rules) "
                         "are no longer shown or set")
LIMITS_NO_IMAGE_META = _gate("2.39", "limits", "no maxImageMeta (no image proxy)")
TENANT_USAGE_PAGING = _gate("2.40", "os-simple-tenant-usage", "limit and marker page the "
                            "servers counted, with tenant_usages_links")
QUOTA_CLASS_SERVER_GROUPS = _gate("2.50", "os-quota-class-sets", "server_groups and "
                                  "server_group_members are shown and set")
QUOTA_NO_INJECTED_FILES = _gate("2.57", "os-quota-sets, limits", "the injected files' "
                                "resources are no longer shown or set")
QUOTA_STRICT_QUERY = _gate("2.75", "os-quota-sets, limits, os-simple-tenant-usage",
                           "a query parameter the route does not take is a 400")


def at(version: Version, gate: Gate) -> bool:
    """Whether a request of ``version`` gets ``gate``'s behaviour."""
    return version >= gate.version


def document() -> list[dict[str, str]]:
    """The gates as /openapi.json lists them, oldest first."""
    return [{"version": str(gate.version), "resource": gate.resource, "change": gate.change}
            for gate in sorted(GATES, key=lambda gate: gate.version)]
