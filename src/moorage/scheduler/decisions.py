"""What each stage of a scheduling decided, recorded where it decided it.

One typed record per scheduling, for successful and failed ones alike (after
Nomad's AllocMetric): which hosts each constraint excluded (counted; named for
admins, capped), how the weighers ordered the survivors, which claims failed, the
host chosen. (What each request filter added is the request filters' own record,
kept beside it: ``filters`` of the scheduling record, the fault and the plan.) The
server's scheduling record, its NoValidHost fault, ``moorage server show``, the dry
run and ``moorage run``'s report all read this one structure; nothing parses
messages back.

Stages, in pipeline order:

- ``request filter``: a request filter that refused the request outright;
- ``placement``: each constraint of the allocation-candidates query, counted on
  its own by placement (the Moorage-Explain extension), over every host;
- ``request``: hosts the request itself excludes (ignore_hosts, requested_host)
  and hosts placement offered that no compute service owns;
- ``host filter``: each host filter, over the hosts placement offered;
- ``claim``: hosts whose resources were taken between the query and the claim.

JSON is the stored form (``to_json``/``from_json``); ``for_user`` strips every
host identity for callers the host policy does not allow to see them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

from moorage.model.disclosure import IDENTIFIES_HOST, without_hosts
from moorage.model.discretion import EXACT, Floor

# Hosts named per exclusion at most (the rest are counted): a record stays small
# when a constraint excludes thousands of hosts.
LISTED_HOSTS = 20
# Weighed hosts kept, best first.
LISTED_WEIGHED = 5

STAGES = ("request filter", "placement", "request", "host filter", "claim")


@dataclass(frozen=True)
class Exclusion:
    """Hosts one constraint excluded, on its own, at one stage."""

    stage: str
    # What it is, for people: "required trait COMPUTE_NET_VIF_MODEL_E1000".
    constraint: str
    # A short name from a bounded vocabulary (trait, resource class, filter name).
    key: str
    excluded: int
    # Hosts the stage looked at (the denominator of "excludes 14 of 17 hosts").
    of: int
    # Where the request got it: "image property hw_vif_model=e1000".
    origin: str | None = None
    # The hosts it excluded, named (capped), and how many more: for admins only.
    hosts: Annotated[tuple[str, ...], IDENTIFIES_HOST] = ()
    hosts_omitted: Annotated[int, IDENTIFIES_HOST] = 0
    # reason -> hosts (host filters say why each host failed).
    reasons: Mapping[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "stage": self.stage, "constraint": self.constraint, "key": self.key,
            "excluded": self.excluded, "of": self.of}
        if self.origin:
            data["origin"] = self.origin
        if self.hosts:
            data["hosts"] = list(self.hosts)
        if self.hosts_omitted:
            data["hosts_omitted"] = self.hosts_omitted
        if self.reasons:
            data["reasons"] = dict(self.reasons)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Exclusion:
        return cls(str(data["stage"]), str(data["constraint"]), str(data["key"]),
                   int(data["excluded"]), int(data["of"]), data.get("origin"),
                   tuple(str(h) for h in data.get("hosts", ())),
                   int(data.get("hosts_omitted", 0)),
                   {str(k): int(v) for k, v in (data.get("reasons") or {}).items()})

    def describe(self, floor: Floor = EXACT) -> str:
        """"required trait X: excludes 14 of 17 hosts"; below ``floor``, "leaves fewer
        than 3 of the 17 hosts" or "excludes fewer than 3 of the 17 hosts"."""
        said = f"{self.constraint}{' (from ' + self.origin + ')' if self.origin else ''}: "
        of = floor.count(self.of)
        hosts = f"{of} hosts" if of is not None else "hosts"
        excluded, remaining = floor.split(self.excluded, self.of)
        if excluded is None:
            if floor.count(self.of - self.excluded) is None:
                return f"{said}leaves fewer than {floor.hosts} of the {hosts}"
            return f"{said}excludes fewer than {floor.hosts} of the {hosts}"
        if remaining:
            return f"{said}excludes {excluded} of {hosts}"
        every = "the only host" if self.of == 1 else f"all {self.of} hosts"
        return f"{said}excludes {every} (no host satisfies it)"

    def for_user(self, floor: Floor) -> dict[str, object]:
        """The JSON form without hosts, its counts as ``floor`` lets them be told
        (``remaining``: the hosts it leaves)."""
        shown = without_hosts(self.to_json(), Exclusion)
        excluded, remaining = floor.split(self.excluded, self.of)
        shown.update(excluded=excluded, of=floor.count(self.of), remaining=remaining,
                     description=self.describe(floor))
        if self.reasons:
            shown["reasons"] = {reason: floor.count(n) for reason, n in self.reasons.items()}
        return shown


@dataclass(frozen=True)
class Together:
    """Constraints each satisfied by some host, but by no host all at once."""

    constraints: tuple[str, ...]
    satisfied: tuple[int, ...]

    def describe(self, floor: Floor = EXACT) -> str:
        said = [floor.words(n) for n in self.satisfied]
        counts = (said[0] if len(set(said)) == 1
                  else ", ".join(said[:-1]) + f" and {said[-1]}")
        return (f"no host has all of {' + '.join(self.constraints)} "
                f"({counts} hosts have each)")


@dataclass(frozen=True)
class Relaxation:
    """The smallest change that would make the request schedulable: one constraint
    whose removal leaves ``hosts`` hosts."""

    constraint: str
    origin: str | None
    hosts: int

    def describe(self, floor: Floor = EXACT) -> str:
        origin = f" (from {self.origin})" if self.origin else ""
        told = floor.words(self.hosts)
        noun = "host satisfies" if told == "1" else "hosts satisfy"
        return (f"smallest change: without {self.constraint}{origin}, {told} {noun} "
                "every other constraint")


@dataclass(frozen=True)
class Weighed:
    host: str
    weight: float


@dataclass
class Decisions:
    """The record of one scheduling. ``hosts``: the hosts placement counted (None
    when placement does not explain, e.g. an upstream placement)."""

    hosts: int | None = None
    exclusions: list[Exclusion] = field(default_factory=list)
    together: Together | None = None
    relaxed: Relaxation | None = None
    candidates: int = 0
    passing: int = 0
    weighed: Annotated[list[Weighed], IDENTIFIES_HOST] = field(default_factory=list)
    claims_failed: Annotated[list[str], IDENTIFIES_HOST] = field(default_factory=list)
    chosen: Annotated[str | None, IDENTIFIES_HOST] = None
    alternates: Annotated[list[str], IDENTIFIES_HOST] = field(default_factory=list)
    # What left no host (a bounded label), when nothing was chosen.
    deciding: str | None = None
    # What could not be counted (an upstream placement, a failed diagnosis).
    notes: list[str] = field(default_factory=list)

    def exclude(self, exclusion: Exclusion) -> None:
        self.exclusions.append(exclusion)

    def to_json(self) -> dict[str, Any]:
        """The stored form. Kept small, as it is written with every server: only
        constraints that excluded a host (one missing excluded none), and no empty
        field."""
        data = {
            "hosts": self.hosts,
            "exclusions": [e.to_json() for e in self.exclusions if e.excluded],
            "together": None if self.together is None else {
                "constraints": list(self.together.constraints),
                "satisfied": list(self.together.satisfied)},
            "relaxed": None if self.relaxed is None else {
                "constraint": self.relaxed.constraint, "origin": self.relaxed.origin,
                "hosts": self.relaxed.hosts},
            "candidates": self.candidates,
            "passing": self.passing,
            "weighed": [{"host": w.host, "weight": round(w.weight, 6)} for w in self.weighed],
            "claims_failed": list(self.claims_failed),
            "chosen": self.chosen,
            "alternates": list(self.alternates),
            "deciding": self.deciding,
            "notes": list(self.notes),
        }
        return {k: v for k, v in data.items() if v not in (None, [], {})}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Decisions:
        together = data.get("together")
        relaxed = data.get("relaxed")
        return cls(
            hosts=data.get("hosts"),
            exclusions=[Exclusion.from_json(e) for e in data.get("exclusions", ())],
            together=None if not together else Together(
                tuple(together["constraints"]), tuple(together["satisfied"])),
            relaxed=None if not relaxed else Relaxation(
                relaxed["constraint"], relaxed.get("origin"), int(relaxed["hosts"])),
            candidates=int(data.get("candidates", 0)),
            passing=int(data.get("passing", 0)),
            weighed=[Weighed(str(w["host"]), float(w["weight"]))
                     for w in data.get("weighed", ())],
            claims_failed=[str(h) for h in data.get("claims_failed", ())],
            chosen=data.get("chosen"),
            alternates=[str(h) for h in data.get("alternates", ())],
            deciding=data.get("deciding"),
            notes=[str(n) for n in data.get("notes", ())],
        )

    # -- in words ------------------------------------------------------------------
    def explanation(self, limit: int = 6, floor: Floor = EXACT) -> str:
        """Per constraint, how many hosts it excluded (most first, at most ``limit``),
        what no host has together, and the smallest change; no host names, and no
        count below ``floor``."""
        ranked = self.ranked()
        parts = [e.describe(floor) for e in ranked[:limit]]
        more = len(ranked) - limit
        if more > 0:
            parts.append(f"and {more} more constraint{'s' if more > 1 else ''}")
        if self.together is not None:
            parts.append(self.together.describe(floor))
        if self.relaxed is not None:
            parts.append(self.relaxed.describe(floor))
        parts.extend(self.notes)
        return "; ".join(parts)

    def ranked(self) -> list[Exclusion]:
        """The exclusions that excluded something, most excluding first (pipeline
        order among equals)."""
        found = [e for e in self.exclusions if e.excluded]
        return sorted(found, key=lambda e: (-e.excluded, STAGES.index(e.stage)
                                            if e.stage in STAGES else len(STAGES)))


def listed(hosts: Sequence[str], cap: int = LISTED_HOSTS) -> tuple[tuple[str, ...], int]:
    """The first ``cap`` of ``hosts`` and how many were left out."""
    return tuple(hosts[:cap]), max(0, len(hosts) - cap)


def for_user(data: Mapping[str, Any], floor: Floor) -> dict[str, Any]:
    """A stored record without host identities (the fields marked so) and with no count
    below ``floor``: constraints stay, names of hosts (excluded, weighed, claimed,
    chosen) go, and small counts read null."""
    record = Decisions.from_json(data)
    shown = without_hosts(data, Decisions)
    for name in ("hosts", "candidates", "passing"):
        if name in shown:
            shown[name] = floor.count(shown[name])
    shown["exclusions"] = [e.for_user(floor) for e in record.exclusions if e.excluded]
    if record.together is not None:
        shown["together"] = {"constraints": list(record.together.constraints),
                             "satisfied": [floor.count(n) for n in record.together.satisfied],
                             "description": record.together.describe(floor)}
    if record.relaxed is not None:
        shown["relaxed"] = {"constraint": record.relaxed.constraint,
                            "origin": record.relaxed.origin,
                            "hosts": floor.count(record.relaxed.hosts),
                            "description": record.relaxed.describe(floor)}
    if not floor.exact:
        # The counts below it read null; the descriptions say "fewer than N".
        shown["host_floor"] = floor.hosts
    return shown
