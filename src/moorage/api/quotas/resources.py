"""The quota resources nova shows, their defaults, and what each microversion hides.

nova keeps the network resources of nova-network (fixed_ips, floating_ips,
security_groups, security_group_rules, always unlimited) in its bodies until 2.36,
and the injected files' until 2.57 (``moorage.api.microversion``'s gates).
"""

from __future__ import annotations

from enum import StrEnum

from oslo_config import cfg

from moorage.api import microversion as mv
from moorage.api.microversion import Version


class Resource(StrEnum):
    """A quota resource, by nova's name."""

    INSTANCES = "instances"
    CORES = "cores"
    RAM = "ram"
    METADATA_ITEMS = "metadata_items"
    INJECTED_FILES = "injected_files"
    INJECTED_FILE_CONTENT_BYTES = "injected_file_content_bytes"
    INJECTED_FILE_PATH_BYTES = "injected_file_path_bytes"
    KEY_PAIRS = "key_pairs"
    SERVER_GROUPS = "server_groups"
    SERVER_GROUP_MEMBERS = "server_group_members"
    FIXED_IPS = "fixed_ips"
    FLOATING_IPS = "floating_ips"
    SECURITY_GROUPS = "security_groups"
    SECURITY_GROUP_RULES = "security_group_rules"


R = Resource
# A server's own resources: counted from the servers of a project (and its user).
SERVER_RESOURCES = (R.INSTANCES, R.CORES, R.RAM)
NETWORK = frozenset({R.FIXED_IPS, R.FLOATING_IPS, R.SECURITY_GROUPS, R.SECURITY_GROUP_RULES})
INJECTED = frozenset({R.INJECTED_FILES, R.INJECTED_FILE_CONTENT_BYTES,
                      R.INJECTED_FILE_PATH_BYTES})
# nova's quota classes showed the server groups' limits only from 2.50.
SERVER_GROUPS = frozenset({R.SERVER_GROUPS, R.SERVER_GROUP_MEMBERS})

# The [quota] option of each resource's default, where it is not the resource's name;
# the network resources have none (always -1, as nova's).
_OPTION = {R.INJECTED_FILE_PATH_BYTES: "injected_file_path_length"}


def default(conf: cfg.ConfigOpts, resource: Resource) -> int:
    """``resource``'s limit when nothing stored says otherwise."""
    if resource in NETWORK:
        return -1
    return int(conf.quota[_OPTION.get(resource, str(resource))])


def hidden(version: Version) -> frozenset[Resource]:
    """The resources a body of os-quota-sets at ``version`` leaves out."""
    if mv.at(version, mv.QUOTA_NO_INJECTED_FILES):
        return NETWORK | INJECTED
    if mv.at(version, mv.QUOTA_NO_NETWORK):
        return NETWORK
    return frozenset()


def shown(version: Version) -> list[Resource]:
    """The resources os-quota-sets shows at ``version``, in nova's order."""
    gone = hidden(version)
    return [resource for resource in Resource if resource not in gone]


def class_shown(version: Version) -> list[Resource]:
    """The resources os-quota-class-sets shows at ``version``."""
    return [resource for resource in shown(version)
            if resource not in SERVER_GROUPS or mv.at(version, mv.QUOTA_CLASS_SERVER_GROUPS)]
