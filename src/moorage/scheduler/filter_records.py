"""What each request filter added to the request spec: what, from where, and why.

A request filter records each thing it adds where it decides to add it, as an
``Addition``: the constraint it writes (a required or forbidden host trait, a
``member_of``, a forbidden aggregate) and on what names, its ``Origin`` (an image
property with its value, the image's disk format, a flavor extra spec, an aggregate's
metadata, or the request filter's own rule) and a short why. Readers take the fields
and never parse text: ``explain.trait_origins`` names where each trait came from, the
command line renders ``describe()``. Rendering is the last step, never an input.

JSON only at the edges (``FilterRecord.to_json``/``from_json``, ``records_json``).
``from_json`` still reads the strings ``added`` held before it was typed, as server
rows stored them: ``root_required:X (hw_vif_model=e1000)``, ``root_required:X``,
``root_forbidden:X``, ``member_of:in:a,b``, ``forbidden_aggregates:x``; where such a
string does not say its origin, the origin is the request filter that wrote it.
"""

from __future__ import annotations

import enum
import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import orjson

from moorage.model.image import TRAIT_PREFIX


class Constraint(enum.StrEnum):
    """What an addition writes: the spec's field (placement's query parameter)."""

    ROOT_REQUIRED = "root_required"                # a trait the host must have
    ROOT_FORBIDDEN = "root_forbidden"              # a trait the host must not have
    MEMBER_OF = "member_of"                        # in one of these aggregates
    FORBIDDEN_AGGREGATES = "forbidden_aggregates"  # outside this aggregate

    @property
    def words(self) -> str:
        return _CONSTRAINT_WORDS[self]


_CONSTRAINT_WORDS: Mapping[Constraint, str] = {
    Constraint.ROOT_REQUIRED: "required host trait",
    Constraint.ROOT_FORBIDDEN: "forbidden host trait",
    Constraint.MEMBER_OF: "in one of aggregates",
    Constraint.FORBIDDEN_AGGREGATES: "outside aggregate",
}
TRAIT_CONSTRAINTS = frozenset({Constraint.ROOT_REQUIRED, Constraint.ROOT_FORBIDDEN})


class OriginKind(enum.StrEnum):
    """Where a constraint comes from."""

    IMAGE_PROPERTY = "image_property"          # hw_vif_model=e1000, trait:NAME=required
    IMAGE = "image"                            # the image's own disk_format
    FLAVOR_EXTRA_SPEC = "flavor_extra_spec"    # trait1:CUSTOM_A=required
    AGGREGATE_METADATA = "aggregate_metadata"  # availability_zone=az1, filter_tenant_id*=p
    REQUEST_FILTER = "request_filter"          # the filter's own rule: compute_status_filter

    @property
    def words(self) -> str:
        return self.value.replace("_", " ")


@dataclass(frozen=True)
class Origin:
    """A setting of the image, the flavor or an aggregate (``name=value``), or a
    request filter's own rule (its ``name``, no value)."""

    kind: OriginKind
    name: str
    value: str | None = None

    @classmethod
    def image_trait(cls, trait: str) -> Origin:
        """A trait the image requires itself: ``trait:NAME=required``."""
        return cls(OriginKind.IMAGE_PROPERTY, f"{TRAIT_PREFIX}{trait}", "required")

    @property
    def setting(self) -> str:
        """``hw_vif_model=e1000``; a request filter's name."""
        return self.name if self.value is None else f"{self.name}={self.value}"

    def describe(self) -> str:
        """``image property hw_vif_model=e1000``, ``request filter compute_status_filter``."""
        return f"{self.kind.words} {self.setting}"

    def to_json(self) -> dict[str, str]:
        data = {"kind": str(self.kind), "name": self.name}
        if self.value is not None:
            data["value"] = self.value
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Origin:
        value = data.get("value")
        return cls(OriginKind(str(data["kind"])), str(data["name"]),
                   None if value is None else str(value))


@dataclass(frozen=True)
class Addition:
    """One thing a request filter added: ``constraint`` on ``names`` (one trait, one
    aggregate, or the aggregates of one member_of), from ``origin``, and why."""

    constraint: Constraint
    names: tuple[str, ...]
    origin: Origin
    why: str = ""

    def source(self) -> str:
        """Where the constraint comes from, as a NoValidHost reason names it: the
        origin, which is its own reason; a request filter's rule with its why."""
        text = self.origin.describe()
        if self.origin.kind is OriginKind.REQUEST_FILTER and self.why:
            return f"{text}: {self.why}"
        return text

    def describe(self) -> str:
        """``required host trait COMPUTE_NET_VIF_MODEL_E1000 (image property
        hw_vif_model=e1000)``, as a line of its record shows it: the record names the
        filter, so a filter's own rule reads as its why (``(no disabled host)``)."""
        because = (self.why if self.origin.kind is OriginKind.REQUEST_FILTER
                   else self.origin.describe())
        text = f"{self.constraint.words} {', '.join(self.names)}"
        return f"{text} ({because})" if because else text

    def to_json(self) -> dict[str, object]:
        return {"constraint": str(self.constraint), "names": list(self.names),
                "origin": self.origin.to_json(), "why": self.why}

    @classmethod
    def from_json(cls, data: object, filter_name: str) -> Addition:
        """An addition as ``to_json`` wrote it, or in the old string form."""
        if isinstance(data, str):
            return _from_old_form(data, filter_name)
        if not isinstance(data, Mapping):
            raise TypeError(f"an addition is an object, not {data!r}")
        names, origin = data["names"], data["origin"]
        if not isinstance(names, list) or not isinstance(origin, Mapping):
            raise TypeError(f"an addition's names are a list, its origin an object: {data!r}")
        return cls(Constraint(data["constraint"]), tuple(str(n) for n in names),
                   Origin.from_json(origin), str(data.get("why") or ""))


# "root_required:X (hw_vif_model=e1000)", "member_of:in:a,b", "forbidden_aggregates:x".
_OLD_FORM = re.compile(r"^(?P<constraint>\w+):(?P<in>in:)?(?P<names>[^ ]+)"
                       r"(?: \((?P<name>[^=()]+)=(?P<value>[^()]*)\))?$")


def _from_old_form(text: str, filter_name: str) -> Addition:
    match = _OLD_FORM.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not an addition")
    constraint = Constraint(match["constraint"])
    if (constraint is Constraint.MEMBER_OF) != bool(match["in"]):
        raise ValueError(f"{text!r} is not an addition")
    names = match["names"].split(",") if constraint is Constraint.MEMBER_OF else [
        match["names"]]
    origin = (Origin(OriginKind.REQUEST_FILTER, filter_name) if match["name"] is None
              else Origin(OriginKind.IMAGE_PROPERTY, match["name"], match["value"]))
    return Addition(constraint, tuple(names), origin)


class CorruptFilterRecord(ValueError):
    """A stored filter record that is neither shape ``from_json`` reads."""


@dataclass(frozen=True)
class FilterRecord:
    """What one request filter did to the spec (upstream only logs this; we keep it)."""

    name: str
    ran: bool
    added: Sequence[Addition] = ()
    # Things the user should know: a property value no trait expresses, for instance.
    notes: Sequence[str] = ()
    # ``to_json``'s answer, made once: the same records (read back shared, by
    # ``records_from_json``) are in the scheduling record of every server booted
    # the same way, written and listed again and again.
    _json: dict[str, object] | None = field(default=None, init=False, repr=False,
                                            compare=False)

    def to_json(self) -> dict[str, object]:
        """A new dict at each call; the lists inside are shared and read-only."""
        if self._json is None:
            object.__setattr__(self, "_json", {
                "name": self.name, "ran": self.ran,
                "added": [addition.to_json() for addition in self.added],
                "notes": list(self.notes)})
        assert self._json is not None
        return dict(self._json)

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> FilterRecord:
        """A record as ``to_json`` wrote it, its additions in either form;
        CorruptFilterRecord naming the record and what is wrong otherwise."""
        try:
            name = str(data["name"])
            added, notes = data.get("added") or [], data.get("notes") or []
            if not isinstance(added, list) or not isinstance(notes, list):
                raise TypeError(f"added and notes are lists: {data!r}")
            return cls(name, bool(data.get("ran", True)),
                       tuple(Addition.from_json(a, name) for a in added),
                       tuple(str(note) for note in notes))
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptFilterRecord(
                f"request filter record {data.get('name', '?')!r}: {exc}") from None


def records_from_json(items: Iterable[Mapping[str, object]]) -> tuple[FilterRecord, ...]:
    """Stored records read back, each distinct one once per process and shared: every
    server booted from the same image and flavor holds the same records."""
    return tuple(_read_record(orjson.dumps(item)) for item in items)


@functools.lru_cache(maxsize=1024)
def _read_record(text: bytes) -> FilterRecord:
    return FilterRecord.from_json(orjson.loads(text))


def records_json(records: Iterable[FilterRecord]) -> list[dict[str, object]]:
    """The records as the scheduling record and the plan show them."""
    return [record.to_json() for record in records]
