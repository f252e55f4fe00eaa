"""Validating domain XML against libvirt's own RELAX NG schema.

The schema ships with libvirt (``/usr/share/libvirt/schemas/domain.rng``, from
the libvirt0 package) and is what ``virt-xml-validate`` uses. It is loaded once
per process (about 10 ms) and reused: validating one document then costs well
under a millisecond. It catches what our builder could get wrong (an element in
the wrong place, a bus or video model libvirt does not know); it does not know
what this host supports, which is checks.py's job.
"""

from __future__ import annotations

import functools
import threading
from pathlib import Path

from lxml import etree

DOMAIN_SCHEMA = Path("/usr/share/libvirt/schemas/domain.rng")


class SchemaUnavailable(RuntimeError):
    """libvirt's RNG schema is not installed (or does not load)."""


class InvalidDomainXML(ValueError):
    """A domain document that libvirt's schema rejects; ``errors`` lists why."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("domain XML does not validate against libvirt's schema: "
                         + "; ".join(errors))
        self.errors = errors


# lxml's RelaxNG objects keep their error log on the instance: one validation at
# a time per schema object.
_lock = threading.Lock()


@functools.cache
def _schema(path: Path) -> etree.RelaxNG:
    try:
        # The schema includes its siblings (basictypes.rng, ...) relative to itself.
        return etree.RelaxNG(etree.parse(str(path)))
    except (OSError, etree.XMLSyntaxError, etree.RelaxNGParseError) as exc:
        raise SchemaUnavailable(f"cannot load libvirt's domain schema {path}: {exc}") from exc


def validate(document: etree._Element, schema_path: Path = DOMAIN_SCHEMA) -> None:
    """InvalidDomainXML (with the schema's messages) unless ``document`` is valid."""
    schema = _schema(schema_path)
    with _lock:
        if schema.validate(document):
            return
        errors = [f"line {e.line}: {e.message}" for e in schema.error_log]
    raise InvalidDomainXML(errors or ["(no message from the validator)"])

