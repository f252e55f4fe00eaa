"""``Checked`` refuses exactly what jsonschema refuses, for every schema both APIs use.

jsonschema-rs answers first; what it accepts is never asked of jsonschema. So the
property held here, on documents generated from each schema (near-valid ones, with
the edges where the two libraries could differ: a final newline, non-ASCII letters,
control characters, 1.0 for an integer, booleans, uuids in other spellings), is that
jsonschema-rs accepts nothing jsonschema refuses.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Iterator, Mapping
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import moorage.api
import moorage.placement.api
from moorage.api import microversion, validation
from moorage.api.schemas import VERSIONED
from moorage.json_schema import Checked
from moorage.placement.api.schema import Body

JSON_LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**64), 2**64), st.floats(allow_nan=False),
    st.text(max_size=8), st.sampled_from(["", "a\n", "é", "\x00", " ", "1", "1.0"]))
ANY_JSON = st.recursive(
    JSON_LEAVES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                  max_size=3),
    max_leaves=6)
EDGE_SUFFIXES = st.sampled_from(["", "", "", "\n", " ", "é", "\x1f", "\u2028", "-", "_"])


def _strings(schema: Mapping[str, Any]) -> st.SearchStrategy[str]:
    pattern = schema.get("pattern")
    fmt = schema.get("format")
    if fmt == "uuid":
        base = st.uuids().map(str) | st.uuids().map(lambda u: u.hex) \
            | st.uuids().map(lambda u: str(u).upper())
    elif fmt == "ipv4":
        base = st.ip_addresses(v=4).map(str) | st.just("01.2.3.4")
    elif fmt == "ipv6":
        base = st.ip_addresses(v=6).map(str)
    elif isinstance(pattern, str):
        base = st.from_regex(pattern, fullmatch=True)
    else:
        low = int(schema.get("minLength", 0))
        base = st.text(min_size=low, max_size=max(low, min(int(schema.get("maxLength", 12)), 12)))
    # Mostly of the schema's shape, sometimes with an edge appended.
    return st.one_of(base, base, base, st.tuples(base, EDGE_SUFFIXES).map("".join))


def _keys(schema: Mapping[str, Any]) -> st.SearchStrategy[str]:
    """Keys of extra members: the schema's patterns mostly, sometimes any text."""
    choices: list[st.SearchStrategy[str]] = []
    for pattern in schema.get("patternProperties", {}) or {}:
        choices.append(st.from_regex(pattern, fullmatch=True))
    names = schema.get("propertyNames")
    if isinstance(names, Mapping):
        choices.append(_strings(names))
    if not choices:
        choices.append(st.text(min_size=1, max_size=5))
    return st.one_of(*choices, *choices, *choices, st.text(max_size=5))


def _members(schema: Mapping[str, Any]) -> object:
    """The schema of extra members' values."""
    for value in (schema.get("patternProperties") or {}).values():
        return value
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, Mapping) else {}


def _objects(schema: Mapping[str, Any], depth: int) -> st.SearchStrategy[dict[str, Any]]:
    properties = schema.get("properties", {}) or {}
    required = [k for k in schema.get("required", ()) if k in properties]
    optional = {k: documents(v, depth + 1) for k, v in properties.items() if k not in required}
    fixed = st.fixed_dictionaries({k: documents(properties[k], depth + 1) for k in required},
                                  optional=optional)
    open_ = bool(schema.get("patternProperties") or schema.get("propertyNames")
                 or isinstance(schema.get("additionalProperties"), Mapping))
    least = min(1, int(schema.get("minProperties", 0)))
    if open_:
        extra = st.dictionaries(_keys(schema), documents(_members(schema), depth + 1),
                                min_size=least if not required else 0, max_size=max(least, 1))
    else:
        extra = st.one_of(st.just({}), st.just({}), st.just({}),
                          st.dictionaries(st.text(max_size=5), ANY_JSON, max_size=1))
    shapes = [st.tuples(fixed, extra).map(lambda pair: {**pair[1], **pair[0]})]
    if properties and not required and (least or schema.get("maxProperties") == 1):
        # One member of the schema's own (an action, an update of some fields).
        shapes.append(st.sampled_from(sorted(properties)).flatmap(
            lambda key: documents(properties[key], depth + 1).map(lambda v: {key: v})))
    return st.one_of(*shapes)


def documents(schema: object, depth: int = 0) -> st.SearchStrategy[Any]:
    """Documents near ``schema``: mostly of its shape, sometimes anything."""
    if not isinstance(schema, Mapping) or depth > 6:
        return ANY_JSON
    choices: list[st.SearchStrategy[Any]] = []
    for key in ("anyOf", "oneOf", "allOf"):
        for part in schema.get(key, ()):
            choices.append(documents(part, depth + 1))
    if "enum" in schema:
        choices.append(st.sampled_from(list(schema["enum"])))
    if "const" in schema:
        choices.append(st.just(schema["const"]))
    kinds = schema.get("type")
    kinds = [kinds] if isinstance(kinds, str) else list(kinds or [])
    for kind in kinds:
        if kind == "string":
            choices.append(_strings(schema))
        elif kind in ("integer", "number"):
            low, high = schema.get("minimum"), schema.get("maximum")
            ints = st.integers(min_value=None if low is None else int(low) - 1,
                               max_value=None if high is None else int(high) + 1)
            choices.append(st.one_of(ints, ints, ints, ints.map(float), st.booleans()))
        elif kind == "boolean":
            choices.append(st.booleans() | st.sampled_from([0, 1, "true"]))
        elif kind == "null":
            choices.append(st.none())
        elif kind == "array" and schema.get("prefixItems"):
            choices.append(st.tuples(*(documents(item, depth + 1)
                                       for item in schema["prefixItems"])).map(list))
        elif kind == "array":
            items = schema.get("items", {})
            least = int(schema.get("minItems", 0))
            choices.append(st.lists(documents(items, depth + 1), min_size=least,
                                    max_size=least + 2))
        elif kind == "object":
            choices.append(_objects(schema, depth))
    if not choices:
        return ANY_JSON
    shaped = st.one_of(*choices)
    return st.one_of(shaped, shaped, shaped, ANY_JSON) if depth < 2 else shaped


def _checked_in(value: object) -> Iterator[Checked]:
    if isinstance(value, Checked):
        yield value
    elif isinstance(value, Body):
        yield value.validator
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _checked_in(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _checked_in(item)


def _all_checked() -> list[tuple[str, Checked]]:
    found: dict[int, tuple[str, Checked]] = {}
    for package in (moorage.placement.api, moorage.api):
        for module_info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if ".migrations" in module_info.name:
                continue  # alembic's environments run only under alembic
            module = importlib.import_module(module_info.name)
            for name, value in vars(module).items():
                for checked in _checked_in(value):
                    found.setdefault(id(checked), (f"{module_info.name}.{name}", checked))
    for handler, checked in validation.VALIDATORS.items():
        found[id(checked)] = (f"{handler}", checked)
    for handler in sorted(VERSIONED):
        for version in (microversion.MIN_VERSION, microversion.MAX_VERSION):
            checked = validation.validator(handler, version)
            assert checked is not None
            found.setdefault(id(checked), (f"{handler}@{version}", checked))
    return sorted(found.values(), key=lambda item: item[0])


CHECKED = _all_checked()


def test_every_schema_of_both_apis_is_found() -> None:
    names = {name.rsplit(".", 1)[-1] if name.startswith("moorage.") else name
             for name, _ in CHECKED}
    assert len(CHECKED) > 60, len(CHECKED)
    assert {"PUT_SCHEMAS", "_SCHEMAS", "create_flavor", "create_server@2.100"} <= names, names


@pytest.mark.parametrize(("name", "checked"), CHECKED, ids=[n for n, _ in CHECKED])
def test_rust_accepts_nothing_jsonschema_refuses(name: str, checked: Checked) -> None:
    seen = {"valid": 0, "fast": 0}

    def holds(document: Any) -> None:
        valid = checked.python.is_valid(document)
        fast = checked.accepted_fast(document)
        seen["valid"] += valid
        seen["fast"] += fast
        assert valid or not fast, f"{name}: jsonschema-rs accepts {document!r}"
        if valid:
            checked.validate(document)
        else:
            with pytest.raises(jsonschema.ValidationError):
                checked.validate(document)

    # Deterministic; a deeper schema gets more documents until some are valid.
    for examples in (40, 400):
        settings(max_examples=examples, deadline=None, database=None, derandomize=True,
                 suppress_health_check=list(HealthCheck))(
            given(documents(checked.schema))(lambda document: holds(document)))()
        if seen["valid"]:
            break
    # The generator reaches both answers, and Rust answers for the valid ones.
    assert seen["valid"] > 0, f"{name}: no valid document generated"
    assert seen["fast"] > 0, f"{name}: jsonschema-rs accepted none of them"


def test_where_the_libraries_differ_jsonschema_decides() -> None:
    """A final newline: Python's ``$`` matches before it, ECMA's does not. Rust refuses,
    jsonschema accepts, and so does Checked."""
    schema = {"type": "string", "pattern": "^[A-Z_]+$"}
    checked = Checked(jsonschema.Draft202012Validator(schema))
    assert re.search("^[A-Z_]+$", "CUSTOM_A\n")
    assert not checked.accepted_fast("CUSTOM_A\n")
    checked.validate("CUSTOM_A\n")
    assert list(checked.iter_errors("CUSTOM_A\n")) == []
    assert checked.accepted_fast("CUSTOM_A")


def test_a_format_is_decided_by_jsonschema_checker() -> None:
    checker = jsonschema.FormatChecker([])

    @checker.checks("uuid")
    def only_dashed(value: object) -> bool:
        return isinstance(value, str) and value.count("-") == 4

    checked = Checked(jsonschema.Draft7Validator({"type": "string", "format": "uuid"},
                                                 format_checker=checker))
    assert checked.accepted_fast("a-b-c-d-e")
    assert not checked.accepted_fast("0123456789abcdef0123456789abcdef")
    with pytest.raises(jsonschema.ValidationError, match="is not a 'uuid'"):
        checked.validate("0123456789abcdef0123456789abcdef")
    # A format jsonschema does not check is not checked in Rust either.
    lenient = Checked(jsonschema.Draft7Validator({"type": "string", "format": "date-time"}))
    assert lenient.accepted_fast("yesterday")


def test_errors_are_jsonschemas_own() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}},
              "required": ["n"], "additionalProperties": False}
    python = jsonschema.Draft202012Validator(schema)
    checked = Checked(python)
    for document in ({"n": 0}, {}, {"n": 1, "x": 2}, {"n": "1"}):
        assert [e.message for e in checked.iter_errors(document)] == \
            [e.message for e in python.iter_errors(document)]
