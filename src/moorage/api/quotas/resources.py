"""The quota resources nova shows, their defaults, and what each microversion hides.

nova keeps the network resources of nova-network (fixed_ips, floating_ips,
security_groups, security_group_rules, always unlimited) in its bodies until 2.36,
and the injected files' until 2.57 (``moorage.api.microversion``'s gates).
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType

from oslo_config import cfg

from moorage.api import microversion as mv
from moorage.api.microversion import Version
from moorage.conf.quota import NOOP_DRIVER


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


@dataclass(frozen=True)
class QuotaOptions:
    """What a configuration's [quota] says: whether quotas apply at all (its driver),
    and each resource's default."""

    enforced: bool
    defaults: Mapping[Resource, int]


# Each configuration's [quota], read once (by the configuration's id, with a weak
# reference to tell a live configuration from a dead one's reused id): a create read
# fourteen options through oslo.config for each admission. Options do not change
# while a process runs: a new configuration is a new process (a test's, a new
# ConfigOpts before the first request).
_OPTIONS: dict[int, tuple[weakref.ref[cfg.ConfigOpts], QuotaOptions]] = {}


def options(conf: cfg.ConfigOpts) -> QuotaOptions:
    """``conf``'s [quota], read on first use."""
    key = id(conf)
    kept = _OPTIONS.get(key)
    if kept is not None and kept[0]() is conf:
        return kept[1]
    read = QuotaOptions(
        enforced=str(conf.quota.driver) != NOOP_DRIVER,
        defaults=MappingProxyType({resource: default(conf, resource)
                                   for resource in Resource}))
    _OPTIONS[key] = (weakref.ref(conf, lambda _gone: _OPTIONS.pop(key, None)), read)
    return read


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
