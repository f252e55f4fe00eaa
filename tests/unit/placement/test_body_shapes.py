"""Each request body's type (``Body.shape``) against its JSON schema.

``Request.json_body`` returns the type a ``Body`` names, trusting the schema to have
admitted only documents of that type; mypy then checks handlers against the type.
These tests hold the two to each other: every key a schema lets in is a key of the
type, every key the type promises is one the schema requires, and so on down the
nested objects, lists and maps. A TypedDict may know keys an older microversion's
schema does not have (``NotRequired``: one type serves every version).
"""

from __future__ import annotations

import typing
from collections.abc import Iterator, Mapping

import pytest

from moorage.placement.api import (
    aggregate,
    allocation,
    inventory,
    reshaper,
    resource_class,
    resource_provider,
    trait,
)
from moorage.placement.api.schema import Body

_MODULES = (aggregate, allocation, inventory, reshaper, resource_class, resource_provider,
            trait)


def _bodies() -> Iterator[tuple[str, Body[object]]]:
    for module in _MODULES:
        for name, value in vars(module).items():
            if isinstance(value, Body):
                yield f"{module.__name__}.{name}", value
            elif isinstance(value, dict):
                for version, body in value.items():
                    if isinstance(body, Body):
                        yield f"{module.__name__}.{name}[{version}]", body


BODIES = dict(_bodies())


def _any_json(shape: object) -> bool:
    """Whether ``shape`` is ``JSONValue`` (as get_type_hints evaluates it): any document."""
    args = typing.get_args(shape)
    return ({str, int, float, bool, type(None)} <= set(args)
            and any(typing.get_origin(a) is Mapping for a in args))


def _required_keys(shape: type) -> set[str]:
    """The keys a TypedDict promises (``__required_keys__`` misses ``NotRequired``
    written in a string annotation on Python 3.11)."""
    hints = typing.get_type_hints(shape, include_extras=True)
    return {key for key, hint in hints.items()
            if typing.get_origin(hint) is typing.Required
            or (shape.__total__ and typing.get_origin(hint) is not typing.NotRequired)}


def _mismatches(schema: object, shape: object, where: str) -> Iterator[str]:
    """How ``shape`` (a type) fails to describe what ``schema`` admits."""
    assert isinstance(schema, dict), where
    if _any_json(shape):
        return
    if "anyOf" in schema:
        # A value or null: the type must allow None.
        args = typing.get_args(shape)
        if {"type": "null"} in schema["anyOf"] and type(None) not in args:
            yield f"{where}: the schema admits null, {shape} does not"
        return
    kind = schema.get("type")
    origin = typing.get_origin(shape)
    if typing.is_typeddict(shape):
        if kind != "object" or "properties" not in schema:
            yield f"{where}: {shape.__name__} for a schema of type {kind}"
            return
        hints = typing.get_type_hints(shape)
        properties = schema["properties"]
        for key in properties.keys() - hints.keys():
            yield f"{where}: {shape.__name__} lacks {key!r}"
        if schema.get("additionalProperties", True) is not False:
            yield f"{where}: the schema admits other keys than {shape.__name__}'s"
        for key in _required_keys(shape) - set(schema.get("required", ())):
            yield f"{where}: {shape.__name__} promises {key!r}, the schema does not require it"
        for key in properties.keys() & hints.keys():
            yield from _mismatches(properties[key], hints[key], f"{where}.{key}")
    elif origin is dict:
        key_type, value_type = typing.get_args(shape)
        patterns = schema.get("patternProperties", {})
        if kind != "object" or not patterns or key_type is not str:
            yield f"{where}: {shape} for {schema}"
            return
        for pattern, value_schema in patterns.items():
            yield from _mismatches(value_schema, value_type, f"{where}[{pattern}]")
        extra = schema.get("additionalProperties", True)
        if extra is True:
            if not _any_json(value_type):
                yield f"{where}: the schema admits any value besides the patterns'"
        elif extra is not False:
            yield from _mismatches(extra, value_type, f"{where}[*]")
    elif origin is list:
        (item_type,) = typing.get_args(shape)
        if kind != "array" or "items" not in schema:
            yield f"{where}: {shape} for {schema}"
            return
        yield from _mismatches(schema["items"], item_type, f"{where}[]")
    else:
        scalars = {"string": str, "integer": int, "number": float, "boolean": bool,
                   "null": type(None)}
        kinds = kind if isinstance(kind, list) else [kind]
        wanted = {scalars.get(k) for k in kinds}
        allowed = set(typing.get_args(shape)) or {shape}
        if not wanted <= allowed:
            yield f"{where}: the schema admits {kinds}, the type is {shape}"


def test_every_handler_body_is_found() -> None:
    assert len(BODIES) > 20
    assert any(name.endswith("PUT_SCHEMAS[1.38]") for name in BODIES)


@pytest.mark.parametrize("name", sorted(BODIES))
def test_shape_describes_what_the_schema_admits(name: str) -> None:
    body = BODIES[name]
    assert list(_mismatches(body.schema, body.shape, name)) == []


def test_a_shape_that_promises_too_much_is_caught() -> None:
    class Named(typing.TypedDict):
        name: str
        uuid: str

    schema = {"type": "object", "properties": {"name": {"type": "string"},
                                               "uuid": {"type": "string"}},
              "required": ["name"], "additionalProperties": False}
    assert list(_mismatches(schema, Named, "body")) == [
        "body: Named promises 'uuid', the schema does not require it"]
