"""Parsers of placement query parameters: pure functions from strings to values.

They are shared by GET /resource_providers and GET /allocation_candidates and
raise ``BadRequest`` with upstream's wording, which clients match on.
"""

from __future__ import annotations

import uuid as uuidlib

from moorage.placement.errors import BadRequest

# A required-traits expression: a list of any-of sets, all of which must hold.
AnyOfTraits = list[frozenset[str]]


def is_uuid_like(value: str) -> bool:
    """True for what oslo.utils calls uuid-like: any spelling of a UUID that round-trips."""
    try:
        bare = (
            value.replace("urn:", "").replace("uuid:", "").strip("{}").replace("-", "").lower()
        )
        return str(uuidlib.UUID(value)).replace("-", "") == bare
    except (TypeError, ValueError, AttributeError):
        return False


def parse_resources(value: str) -> dict[str, int]:
    """``VCPU:2,MEMORY_MB:1024`` -> {"VCPU": 2, "MEMORY_MB": 1024}."""
    if value.strip() == "":
        raise BadRequest(
            "Badly formed resources parameter. Expected resources query string parameter "
            "in form: ?resources=VCPU:2,MEMORY_MB:1024. Got: empty string."
        )
    result: dict[str, int] = {}
    for item in value.split(","):
        try:
            name, amount_s = item.split(":")
        except ValueError:
            raise BadRequest(
                "Badly formed resources parameter. Expected resources query string parameter "
                f"in form: ?resources=VCPU:2,MEMORY_MB:1024. Got: {item}."
            ) from None
        try:
            if not amount_s.isascii():  # int() reads "٣" as 3; an amount is ASCII
                raise ValueError(amount_s)
            amount = int(amount_s)
        except ValueError:
            raise BadRequest(
                f"Requested resource {name} expected positive integer amount. Got: {amount_s}."
            ) from None
        if amount < 1:
            raise BadRequest(f"Requested resource {name} requires amount >= 1. Got: {amount}.")
        result[name] = amount
    return result


def parse_required(
    value: str, *, allow_forbidden: bool, allow_any: bool
) -> tuple[AnyOfTraits, frozenset[str]]:
    """One ``required`` value: ``T1,!T2`` or (from 1.39) ``in:T1,T2``.

    Returns (any-of sets, forbidden traits).
    """
    if value.startswith("in:"):
        if not allow_any:
            raise BadRequest(
                "Invalid query string parameters: The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' "
                f"only supported since microversion 1.39. Got: {value}"
            )
        names = frozenset(part.strip() for part in value[3:].split(","))
        if not all(names):
            raise BadRequest(
                "Invalid query string parameters: Expected 'required' parameter value of the "
                f"form: in:HW_CPU_X86_VMX,CUSTOM_MAGIC. Got an empty trait in: {value}"
            )
        if any(name.startswith("!") for name in names):
            raise BadRequest(
                "Invalid query string parameters: The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' "
                f"does not support forbidden traits. Got: {value}"
            )
        return [names], frozenset()
    parts = [part.strip() for part in value.split(",")]
    forbidden = frozenset(p[1:] for p in parts if p.startswith("!"))
    if not all(parts) or not all(forbidden):
        expected = "HW_CPU_X86_VMX,!CUSTOM_MAGIC" if allow_forbidden else (
            "HW_CPU_X86_VMX,CUSTOM_MAGIC")
        raise BadRequest(
            "Invalid query string parameters: Expected 'required' parameter value of the "
            f"form: {expected}. Got an empty trait in: {value}"
        )
    if forbidden and not allow_forbidden:
        raise BadRequest(
            "Invalid query string parameters: Expected 'required' parameter value of the "
            f"form: HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: {value}"
        )
    required = [frozenset([p]) for p in parts if not p.startswith("!")]
    return required, forbidden


def parse_required_params(
    values: list[str], *, allow_forbidden: bool, allow_any: bool
) -> tuple[AnyOfTraits, frozenset[str]]:
    """All ``required`` values of one group. Before 1.39 only the last one counts."""
    if not allow_any:
        values = values[-1:]
    required: AnyOfTraits = []
    forbidden: set[str] = set()
    for value in values:
        r, f = parse_required(value, allow_forbidden=allow_forbidden, allow_any=allow_any)
        required.extend(r)
        forbidden |= f
    return required, frozenset(forbidden)


def parse_legacy_traits(value: str) -> tuple[frozenset[str], frozenset[str]]:
    """``root_required``: ``T1,!T2`` only (no ``in:``). Returns (required, forbidden)."""
    required, forbidden = parse_required(value, allow_forbidden=True, allow_any=False)
    return frozenset(name for names in required for name in names), forbidden


def parse_member_of(value: str) -> tuple[frozenset[str], frozenset[str]]:
    """One ``member_of`` value: ``AGG``, ``in:A,B``, ``!AGG`` or ``!in:A,B``.

    Returns (aggregates of which at least one is required, forbidden aggregates).
    """
    if "," in value and not (value.startswith("in:") or value.startswith("!in:")):
        raise BadRequest(
            "Multiple values for 'member_of' must be prefixed with the 'in:' or '!in:' "
            f"keyword using the valid microversion. Got: {value}"
        )
    required: frozenset[str] = frozenset()
    forbidden: frozenset[str] = frozenset()
    if value.startswith("!in:"):
        forbidden = frozenset(value[4:].split(","))
    elif value.startswith("!"):
        forbidden = frozenset([value[1:]])
    elif value.startswith("in:"):
        required = frozenset(value[3:].split(","))
    else:
        required = frozenset([value])
    for agg in required | forbidden:
        if not is_uuid_like(agg):
            raise BadRequest(
                "Invalid query string parameters: Expected 'member_of' parameter to contain "
                f"valid UUID(s). Got: {agg}"
            )
    return required, forbidden


def parse_member_of_params(
    values: list[str], suffix: str, *, allow_multiple: bool, allow_forbidden: bool
) -> tuple[list[frozenset[str]], frozenset[str]]:
    """All ``member_of`` values of one group: (list of any-of sets, forbidden set)."""
    if not allow_multiple and len(values) > 1:
        raise BadRequest(f"Multiple member_of{suffix} parameters are not supported")
    required: list[frozenset[str]] = []
    forbidden: set[str] = set()
    for value in values:
        r, f = parse_member_of(value)
        if r:
            required.append(r)
        if f:
            if not allow_forbidden:
                raise BadRequest(
                    f"Forbidden member_of{suffix} parameters are not supported in the "
                    "specified microversion"
                )
            forbidden |= f
    return required, frozenset(forbidden)


def parse_in_tree(value: str) -> str:
    stripped = value.strip()
    if not is_uuid_like(stripped):
        raise BadRequest(
            "Invalid query string parameters: Expected 'in_tree' parameter to be a format of "
            f"uuid. Got: {value}"
        )
    return stripped
