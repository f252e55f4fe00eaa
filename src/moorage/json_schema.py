"""Request schemas checked in Rust first, with jsonschema's verdict and words.

jsonschema (Python) takes about 230 µs to accept a one-host claim body (``PUT
/allocations``) on the 2-core machine of docs/performance.md; jsonschema-rs takes
2 µs. Every body of every request is checked, so ``Checked`` asks jsonschema-rs
first and, only when it refuses, asks jsonschema again: jsonschema's verdict and its
error (the message clients and the gabbi tests read) stand. A document is therefore
refused exactly when jsonschema refuses it, provided jsonschema-rs accepts nothing
jsonschema refuses. What makes that hold:

* the same draft (a schema whose draft has no Rust twin is checked by jsonschema
  alone);
* every ``format`` the schema names is decided by jsonschema's own format checker
  (jsonschema-rs calls it back), and a format that checker does not check is not
  checked in Rust either;
* jsonschema-rs's regular expressions are ECMA-262's, never more lenient than
  Python's on the patterns used here: ``$`` does not match before a final newline
  and ``\\w`` is ASCII. Where they are stricter, jsonschema has the last word.

tests/unit/test_json_schema.py holds every schema of both APIs to that with
generated documents.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Protocol

import jsonschema
import jsonschema_rs
from jsonschema.exceptions import ValidationError

__all__ = ["Checked"]

class _Rust(Protocol):
    """What is used of a jsonschema-rs validator."""

    def is_valid(self, instance: object) -> bool: ...


# The Rust validator of each draft jsonschema may pick.
_RUST_DRAFTS: dict[type[object], Callable[..., _Rust]] = {
    jsonschema.Draft4Validator: jsonschema_rs.Draft4Validator,
    jsonschema.Draft6Validator: jsonschema_rs.Draft6Validator,
    jsonschema.Draft7Validator: jsonschema_rs.Draft7Validator,
    jsonschema.Draft201909Validator: jsonschema_rs.Draft201909Validator,
    jsonschema.Draft202012Validator: jsonschema_rs.Draft202012Validator,
}


def _formats(schema: object, found: set[str]) -> set[str]:
    """Every format name ``schema`` uses, at any depth."""
    if isinstance(schema, Mapping):
        named = schema.get("format")
        if isinstance(named, str):
            found.add(named)
        for value in schema.values():
            _formats(value, found)
    elif isinstance(schema, list):
        for value in schema:
            _formats(value, found)
    return found


def _always(_value: object) -> bool:
    return True


def _checked_by(checker: jsonschema.FormatChecker, name: str) -> Callable[[object], bool]:
    def conforms(value: object) -> bool:
        return checker.conforms(value, name)
    return conforms


def _rust(python: jsonschema.protocols.Validator) -> _Rust | None:
    """The Rust validator that accepts no more than ``python`` does; None when there
    is none (a draft without a Rust twin, a schema it cannot compile)."""
    draft = _RUST_DRAFTS.get(type(python))
    if draft is None:
        return None
    checker: jsonschema.FormatChecker | None = getattr(python, "format_checker", None)
    formats = {
        name: _checked_by(checker, name) if checker is not None and name in checker.checkers
        else _always
        for name in _formats(python.schema, set())
    }
    try:
        return draft(python.schema, validate_formats=True, formats=formats)
    except (ValueError, jsonschema_rs.ValidationError):
        return None


class Checked:
    """A schema's jsonschema validator, asked only about what jsonschema-rs refuses.

    Built on first use: the compute API has a schema per route and microversion, and
    a service starts without compiling those it is never asked about."""

    __slots__ = ("_built", "_rust", "python")

    def __init__(self, python: jsonschema.protocols.Validator) -> None:
        self.python = python
        self._rust: _Rust | None = None
        self._built = False

    @property
    def schema(self) -> object:
        return self.python.schema

    def accepted_fast(self, instance: object) -> bool:
        """Whether jsonschema-rs accepts ``instance`` (False: jsonschema must say)."""
        if not self._built:
            self._rust = _rust(self.python)
            self._built = True
        if self._rust is None:
            return False
        try:
            return self._rust.is_valid(instance)
        except (ValueError, TypeError, OverflowError):
            return False  # not a JSON document as Rust sees it: jsonschema decides

    def validate(self, instance: object) -> None:
        """Nothing if ``instance`` is valid; else jsonschema's ValidationError."""
        if not self.accepted_fast(instance):
            self.python.validate(instance)  # type: ignore[arg-type]

    def iter_errors(self, instance: object) -> Iterator[ValidationError]:
        """jsonschema's errors of ``instance`` (none when it is valid)."""
        if self.accepted_fast(instance):
            return iter(())
        return self.python.iter_errors(instance)  # type: ignore[arg-type]
