"""Validation of flavor extra specs when they are written.

The scheduling keys are checked strictly, as upstream's validators do: ``trait[N]:NAME``
(required | forbidden, NAME an os-traits name or CUSTOM_*), ``resources[N]:RC`` (a
non-negative integer, RC an os-resource-classes name or CUSTOM_*) and ``group_policy``
(none | isolate). The ``hw:`` keys Moorage knows get a light check of their values;
every other key is kept as given (upstream's lax validation of unknown namespaces).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from moorage.model.vocabulary import is_resource_class_name, is_trait_name

# Upstream's request group suffix: 1 to 64 of [a-zA-Z0-9_-].
_SUFFIX = r"([a-zA-Z0-9_-]{1,64})?"
TRAIT_KEY = re.compile(rf"^trait{_SUFFIX}:(.*)$")
RESOURCES_KEY = re.compile(rf"^resources{_SUFFIX}:(.*)$")
TRAIT_VALUES = ("required", "forbidden")
GROUP_POLICIES = ("none", "isolate")


class InvalidExtraSpec(ValueError):
    """An extra spec whose key or value is not allowed; the message names both."""


def _choice(*allowed: str) -> Callable[[str, str], None]:
    def check(key: str, value: str) -> None:
        if value not in allowed:
            raise InvalidExtraSpec(
                f"{key}: {value!r} is not valid; allowed: {', '.join(allowed)}")
    return check


def _positive_int(key: str, value: str) -> None:
    if not (value.isascii() and value.isdigit()) or int(value) < 1:
        raise InvalidExtraSpec(f"{key}: {value!r} is not valid; allowed: a positive integer")


def _boolean(key: str, value: str) -> None:
    if value.strip().lower() not in ("true", "false", "yes", "no", "1", "0", "on", "off",
                                     "t", "f", "y", "n"):
        raise InvalidExtraSpec(f"{key}: {value!r} is not valid; allowed: true, false")


def _page_size(key: str, value: str) -> None:
    if value in ("small", "large", "any") or re.fullmatch(r"\d+([KMG]i?B?)?", value, re.I):
        return
    raise InvalidExtraSpec(
        f"{key}: {value!r} is not valid; allowed: small, large, any, or a size in KiB "
        "(2048, 2MB, 1GB)")


# The hw: keys Moorage knows, with what their values may be.
HW_KEYS: dict[str, Callable[[str, str], None]] = {
    "hw:cpu_policy": _choice("shared", "dedicated", "mixed"),
    "hw:cpu_thread_policy": _choice("prefer", "isolate", "require"),
    "hw:emulator_threads_policy": _choice("share", "isolate"),
    "hw:mem_page_size": _page_size,
    "hw:numa_nodes": _positive_int,
    "hw:cpu_sockets": _positive_int,
    "hw:cpu_cores": _positive_int,
    "hw:cpu_threads": _positive_int,
    "hw:cpu_max_sockets": _positive_int,
    "hw:cpu_max_cores": _positive_int,
    "hw:cpu_max_threads": _positive_int,
    "hw:watchdog_action": _choice("none", "pause", "poweroff", "reset", "disabled"),
    "hw:vif_multiqueue_enabled": _boolean,
    "hw:boot_menu": _boolean,
    "hw:cpu_realtime": _boolean,
    "hw:pmu": _boolean,
    "hw:tpm_model": _choice("tpm-tis", "tpm-crb"),
    "hw:tpm_version": _choice("1.2", "2.0"),
}


def validate_extra_spec(key: str, value: object) -> str:
    """The value of a valid extra spec as stored (a string); InvalidExtraSpec otherwise."""
    if not isinstance(key, str) or not 1 <= len(key) <= 255:
        raise InvalidExtraSpec(f"extra spec key {key!r}: must be a string of 1 to 255 characters")
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise InvalidExtraSpec(f"{key}: the value must be a string, not {value!r}")
    text = str(value)
    if len(text) > 255:
        raise InvalidExtraSpec(f"{key}: the value is longer than 255 characters")
    if match := TRAIT_KEY.match(key):
        name = match.group(2)
        if not is_trait_name(name):
            raise InvalidExtraSpec(
                f"{key}: {name!r} is not a trait; allowed: an os-traits name or "
                "CUSTOM_ followed by A-Z, 0-9 and _")
        _choice(*TRAIT_VALUES)(key, text)
    elif match := RESOURCES_KEY.match(key):
        name = match.group(2)
        if not is_resource_class_name(name):
            raise InvalidExtraSpec(
                f"{key}: {name!r} is not a resource class; allowed: an os-resource-classes "
                "name or CUSTOM_ followed by A-Z, 0-9 and _")
        if not (text.isascii() and text.isdigit()):
            raise InvalidExtraSpec(
                f"{key}: {text!r} is not valid; allowed: a non-negative integer "
                "(0 removes the flavor's own amount)")
    elif key == "group_policy":
        _choice(*GROUP_POLICIES)(key, text)
    elif key in HW_KEYS:
        HW_KEYS[key](key, text)
    return text


def validate_extra_specs(specs: Mapping[str, object]) -> dict[str, str]:
    """Every spec validated, or InvalidExtraSpec for the first bad one."""
    return {key: validate_extra_spec(key, value) for key, value in specs.items()}
