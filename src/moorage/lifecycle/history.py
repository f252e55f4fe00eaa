"""What happened to a server, typed: the hosts tried (``Attempt``), why it is in ERROR
(``Fault``, nova's shape with what Moorage knows besides) and its last scheduling
(``SchedulingRecord``: the request filters' records and the scheduler's decisions).

They are frozen dataclasses from the conductor that records them to the API that
shows them; JSON only at the store's edge (``to_json``/``from_json``) and at the
API's (``to_json`` for those who may see hosts, ``for_user`` for those who may not).
A user's view is built from the fields not marked ``IDENTIFIES_HOST``
(``moorage.model.disclosure``), never by searching text: a driver's own words about a
failure may name its host, its addresses or its software, so they are the admin's
(``Attempt.detail``), and a user reads a sentence made of the kind of failure and the
feature the host could not provide.

The constructors below decide every message a server's history shows, and are pure.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Annotated, Any

from moorage.model.codec import flavor_from_json, flavor_to_json
from moorage.model.disclosure import IDENTIFIES_HOST, without_hosts
from moorage.model.discretion import Floor
from moorage.model.flavor import Flavor
from moorage.scheduler.decisions import Decisions
from moorage.scheduler.decisions import for_user as decisions_for_user
from moorage.scheduler.filter_records import FilterRecord, records_from_json, records_json
from moorage.scheduler.types import Unschedulable


class CorruptHistory(ValueError):
    """A stored history field that cannot be read back (a hand-edited row): names the
    server and the field."""

    def __init__(self, server_uuid: str, field_name: str, why: object) -> None:
        super().__init__(f"server {server_uuid}: its stored {field_name} cannot be read "
                         f"({why}); an administrator must repair or clear it")
        self.server_uuid = server_uuid
        self.field_name = field_name


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- attempts ------------------------------------------------------------------------
class AttemptResult(StrEnum):
    """How one host's turn of a build or move ended."""

    OK = "ok"
    FAILED = "failed"
    # An alternate whose resources were taken meanwhile: never tried.
    CLAIM_FAILED = "claim-failed"
    # Its conductor stopped during the spawn; the build was taken over.
    INTERRUPTED = "interrupted"
    # The late check of the server's group refused the host (members placed there
    # since the scheduler looked): never tried.
    GROUP_REFUSED = "group-refused"


AGENT_UNREACHABLE = "AgentUnreachable"
CLAIM_LOST = ("ClaimFailed", "the alternate's resources were taken by another consumer")
INTERRUPTED = ("Interrupted", "the conductor building it stopped during the spawn; the "
               "build was taken over")


@dataclass(frozen=True)
class Attempt:
    """One host tried. ``detail`` is the driver's (or the transport's) own words: the
    admin's. ``conductor``: which conductor stopped, for an interrupted spawn."""

    host: Annotated[str, IDENTIFIES_HOST]
    node: Annotated[str | None, IDENTIFIES_HOST]
    result: AttemptResult
    kind: str | None = None
    detail: Annotated[str | None, IDENTIFIES_HOST] = None
    feature: str | None = None
    conductor: Annotated[str | None, IDENTIFIES_HOST] = None

    @property
    def failed(self) -> bool:
        return self.result != AttemptResult.OK

    def public_message(self) -> str | None:
        """What failed, in words that name no host: built from the kind of failure and
        the feature, never from the driver's text."""
        if self.result == AttemptResult.OK:
            return None
        if self.result in (AttemptResult.CLAIM_FAILED, AttemptResult.INTERRUPTED,
                           AttemptResult.GROUP_REFUSED):
            return self.detail  # Moorage's own words (CLAIM_LOST, INTERRUPTED, a group's)
        if self.kind == AGENT_UNREACHABLE:
            return "the host's compute agent did not answer"
        if self.feature:
            return f"the host cannot provide {self.feature}"
        return "the host refused the guest"

    def describe(self) -> str:
        """"big1: UnsupportedHardware: no e1000 NIC (feature ...)", for admins."""
        text = f"{self.host}: {self.kind}: {self.detail}"
        if self.feature:
            text += f" (feature {self.feature})"
        return text

    def describe_for_user(self) -> str:
        text = f"{self.kind}: {self.public_message()}"
        if self.feature and self.kind != AGENT_UNREACHABLE:
            text += f" (feature {self.feature})"
        return text

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"host": self.host, "node": self.node,
                                "result": str(self.result), "kind": self.kind,
                                "message": self.detail, "feature": self.feature}
        if self.conductor is not None:
            data["conductor"] = self.conductor
        return data

    def for_user(self) -> dict[str, Any]:
        """The attempt as its owner may read it: result, kind, feature and a message
        that names no host."""
        return {"result": str(self.result), "kind": self.kind,
                "message": self.public_message(), "feature": self.feature}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Attempt:
        return cls(host=str(data["host"]), node=data.get("node"),
                   result=AttemptResult(data.get("result", "failed")),
                   kind=data.get("kind"), detail=data.get("message"),
                   feature=data.get("feature"), conductor=data.get("conductor"))


def attempt_ok(host: str, node: str | None) -> Attempt:
    return Attempt(host, node, AttemptResult.OK)


def attempt_failed(host: str, node: str | None, kind: str, detail: str,
                   feature: str | None = None) -> Attempt:
    """A spawn the host refused (its driver's late check) or that broke there."""
    return Attempt(host, node, AttemptResult.FAILED, kind, detail, feature)


def attempt_unreachable(host: str, node: str | None, detail: str) -> Attempt:
    return Attempt(host, node, AttemptResult.FAILED, AGENT_UNREACHABLE, detail)


def attempt_claim_lost(host: str, node: str | None) -> Attempt:
    """An alternate whose resources were taken meanwhile: it was never tried."""
    return Attempt(host, node, AttemptResult.CLAIM_FAILED, *CLAIM_LOST)


GROUP_POLICY_VIOLATED = "GroupPolicyViolated"


def attempt_group_refused(host: str, node: str | None, reason: str) -> Attempt:
    """A host the late check of the server's group refused (``reason``: the policy's
    words, naming the group and no host): never tried, the build goes on to the next
    alternate."""
    return Attempt(host, node, AttemptResult.GROUP_REFUSED, GROUP_POLICY_VIOLATED,
                   f"the host {reason}")


def attempt_interrupted(host: str, node: str | None, previous_owner: str | None) -> Attempt:
    """A spawn whose conductor stopped before it could tell how it ended; the guest, if
    any, was destroyed and the build went on elsewhere."""
    return Attempt(host, node, AttemptResult.INTERRUPTED, *INTERRUPTED,
                   conductor=previous_owner)


def attempts_json(attempts: Iterable[Attempt]) -> list[dict[str, Any]]:
    return [a.to_json() for a in attempts]


def attempts_from_json(data: Iterable[Mapping[str, Any]]) -> tuple[Attempt, ...]:
    return tuple(Attempt.from_json(a) for a in data)


# -- faults ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Fault:
    """Why a server is in ERROR. ``message`` is the admin's (it may name hosts);
    ``user_message`` is built, where the fault is made, from what names none."""

    message: Annotated[str, IDENTIFIES_HOST]
    user_message: str
    kind: str | None = None
    code: int = 500
    created: str = field(default_factory=_now)
    attempts: Annotated[tuple[Attempt, ...], IDENTIFIES_HOST] = ()
    feature: str | None = None
    takeovers: int | None = None
    # A NoValidHost's record: its decisions, filters and query.
    unschedulable: Annotated[Unschedulable | None, IDENTIFIES_HOST] = None

    def to_json(self) -> dict[str, Any]:
        """The stored form, and what an admin reads: nova's {code, message, created,
        details}, the details holding everything else."""
        details: dict[str, Any] = {}
        if self.unschedulable is not None:
            details.update(self.unschedulable.details())
        if self.kind is not None:
            details["kind"] = self.kind
        if self.attempts:
            details["attempts"] = attempts_json(self.attempts)
        if self.feature is not None:
            details["feature"] = self.feature
        if self.takeovers is not None:
            details["takeovers"] = self.takeovers
        details["user_message"] = self.user_message
        return {"code": self.code, "message": self.message, "details": details,
                "created": self.created}

    def for_user(self, floor: Floor) -> dict[str, Any]:
        """The fault as a user who may not see host identities reads it: the user's
        message, and of the details the kind, the candidate count and the decisions
        without hosts, with no count below ``floor``."""
        details: dict[str, Any] = {}
        if self.kind is not None:
            details["kind"] = self.kind
        why = self.unschedulable
        if why is not None:
            if why.candidates is not None:
                details["candidates"] = floor.count(why.candidates)
            if why.decisions.to_json():
                details["decisions"] = decisions_for_user(why.decisions.to_json(), floor)
        return {"code": self.code, "message": self.user_message, "details": details,
                "created": self.created}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Fault:
        details = dict(data.get("details") or {})
        message = str(data.get("message", ""))
        kind = details.get("kind")
        unschedulable = None
        if kind in (None, NO_VALID_HOST) and "decisions" in details:
            reason = message.removeprefix(NO_VALID_HOST_PREFIX).strip()
            user = str(details.get("user_message") or message)
            unschedulable = Unschedulable.from_details(
                reason, user.removeprefix(NO_VALID_HOST_PREFIX).strip(), details)
            kind = NO_VALID_HOST
        user_message = details.get("user_message")
        if user_message is None:
            user_message = _old_user_message(kind, message, details)
        return cls(
            message=message, user_message=str(user_message),
            kind=kind, code=int(data.get("code", 500)),
            created=str(data.get("created") or ""),
            attempts=attempts_from_json(details.get("attempts") or ()),
            feature=details.get("feature"), takeovers=details.get("takeovers"),
            unschedulable=unschedulable)


NO_VALID_HOST = "NoValidHost"
NO_VALID_HOST_PREFIX = "No valid host was found."


# Details that name a host: a fault recorded with any of them, before messages were kept
# in both forms, has a message that may name one too.
_OLD_HOST_DETAILS = frozenset({"host", "requested_host", "rejections", "attempts"})


def _old_user_message(kind: str | None, message: str, details: Mapping[str, Any]) -> str:
    """The user's message of a fault recorded before messages were kept in both forms:
    scheduling's counts as they were (they name no host), else a bare failure of its
    kind."""
    if "decisions" in details and not _OLD_HOST_DETAILS & details.keys():
        return message
    return f"{kind} failed" if kind else "The operation failed"


def no_valid_host(exc_reason: str, why: Unschedulable) -> Fault:
    """Scheduling found no host: the reason names the constraint that left none."""
    return Fault(message=f"{NO_VALID_HOST_PREFIX} {exc_reason}".rstrip(),
                 user_message=f"{NO_VALID_HOST_PREFIX} {why.user_reason}".rstrip(),
                 kind=NO_VALID_HOST, unschedulable=why)


def build_failed(instance_uuid: str, attempts: Sequence[Attempt], *, retries: bool) -> Fault:
    """The build ran out of hosts.

    With retries enabled (``[scheduler] max_attempts`` > 1 and no forced host) this is
    upstream's MaxRetriesExceeded; without, the fault is the one spawn failure, as
    upstream puts the instance in ERROR with the compute's exception. Either way the
    details list every host tried and why it failed, which upstream keeps only in the
    compute logs."""
    failed = tuple(a for a in attempts if a.failed)
    tried = [a for a in failed if a.result in (AttemptResult.FAILED,
                                                 AttemptResult.GROUP_REFUSED)]
    if retries:
        message = ("Exceeded maximum number of retries. Exhausted all hosts available for "
                   f"retrying build failures for instance {instance_uuid}.")
        user_message = message
        if tried:
            message += " " + "; ".join(a.describe() for a in tried)
            user_message += " " + "; ".join(a.describe_for_user() for a in tried)
        kind = "MaxRetriesExceeded"
    else:
        last = tried[-1] if tried else (failed[-1] if failed else None)
        kind = str(last.kind or "BuildFailed") if last else "BuildFailed"
        prefix = f"Build of instance {instance_uuid} failed: "
        message = prefix + (last.describe() if last else "no host could be tried")
        user_message = prefix + (last.describe_for_user() if last
                                 else "no host could be tried")
    return Fault(message=message, user_message=user_message, kind=kind, attempts=failed)


def build_aborted(instance_uuid: str, attempt: Attempt) -> Fault:
    """A spawn failure another host would repeat: the build stops at once."""
    prefix = f"Build of instance {instance_uuid} aborted: "
    return Fault(message=prefix + attempt.describe(),
                 user_message=prefix + attempt.describe_for_user(),
                 kind=attempt.kind, attempts=(attempt,))


def rebuild_failed(host: str, kind: str, detail: str, feature: str | None) -> Fault:
    refused = attempt_failed(host, None, kind, detail, feature)
    return Fault(message=f"Rebuild failed on {host}: {kind}: {detail}",
                 user_message=f"Rebuild failed: {refused.describe_for_user()}",
                 kind=kind, feature=feature)


def power_failed(operation: str, host: str, kind: str, detail: str) -> Fault:
    """A stop, start or reboot the host could not do (its driver's exception)."""
    return Fault(message=f"{operation} failed on {host}: {kind}: {detail}",
                 user_message=f"{operation} failed: {kind}", kind=kind)


def internal_error(operation: str, exc: BaseException) -> Fault:
    """Something Moorage did not expect; the server must not stay in a task forever."""
    return Fault(message=f"{operation} failed: {type(exc).__name__}: {exc}",
                 user_message=f"{operation} failed: an internal error; an administrator "
                              "can read what it was",
                 kind=type(exc).__name__)


def abandoned(operation: str, takeovers: int) -> Fault:
    """An operation that killed every conductor that carried it out: taken over more
    than ``[conductor] max_takeovers`` times, it is given up rather than tried again."""
    message = (f"{operation} abandoned: the conductors carrying it out stopped "
               f"{takeovers} times ([conductor] max_takeovers); the server was put in "
               "ERROR rather than tried again")
    return Fault(message=message, user_message=message, kind="OperationAbandoned",
                 takeovers=takeovers)


# -- the scheduling record ---------------------------------------------------------------
@dataclass(frozen=True)
class ResizeRecord:
    """What a resize or cold migration awaiting confirmation needs to be reverted."""

    old_flavor_id: str
    old_flavor: Flavor
    old_node: Annotated[str | None, IDENTIFIES_HOST]
    migration: str
    # The server was stopped when the move began: its guest on the destination is
    # kept powered off, and the confirm or revert leaves it SHUTOFF (nova's
    # old_vm_state).
    stopped: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"old_flavor_id": self.old_flavor_id,
                "old_flavor": flavor_to_json(self.old_flavor),
                "old_node": self.old_node, "migration": self.migration,
                "stopped": self.stopped}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ResizeRecord:
        return cls(str(data["old_flavor_id"]), flavor_from_json(data["old_flavor"]),
                   data.get("old_node"), str(data["migration"]),
                   bool(data.get("stopped", False)))


@dataclass(frozen=True)
class SchedulingRecord:
    """What the server's ``moorage:scheduling`` shows about its last scheduling: the
    request filters' records, placement's candidate count and the scheduler's
    decisions; for a failed move, the error; a move's own attempts; a resize's way
    back. ``error_for_user``: the error as a user reads it, when ``error`` names a
    host."""

    operation: str
    filters: tuple[FilterRecord, ...] = ()
    candidates: int | None = None
    hosts_passing_filters: int | None = None
    alternates: Annotated[tuple[str, ...] | None, IDENTIFIES_HOST] = None
    decisions: Decisions | None = None
    error: Annotated[str | None, IDENTIFIES_HOST] = None
    error_for_user: str | None = None
    seconds: float | None = None
    attempts: Annotated[tuple[Attempt, ...] | None, IDENTIFIES_HOST] = None
    resize: ResizeRecord | None = None
    # The conductor that stopped during a move that was rolled back.
    conductor: Annotated[str | None, IDENTIFIES_HOST] = None
    # ``to_json``'s answer, made once: a record is turned to JSON far more often than
    # it is made (each listing of its server, each write of the server's row).
    _json: dict[str, object] | None = field(default=None, init=False, repr=False,
                                         compare=False)

    def to_json(self) -> dict[str, Any]:
        """The record as stored and as an admin reads it: a new dict at each call,
        whose values (lists, nested objects) are shared between calls and read-only."""
        if self._json is None:
            object.__setattr__(self, "_json", self._json_made())
        assert self._json is not None
        return dict(self._json)

    def _json_made(self) -> dict[str, object]:
        data: dict[str, object] = {"operation": self.operation,
                                "filters": records_json(self.filters)}
        optional: dict[str, object] = {
            "candidates": self.candidates,
            "hosts_passing_filters": self.hosts_passing_filters,
            "alternates": list(self.alternates) if self.alternates is not None else None,
            "decisions": self.decisions.to_json() if self.decisions is not None else None,
            "error": self.error,
            "error_for_user": (self.error_for_user if self.error_for_user != self.error
                               else None),
            "seconds": round(self.seconds, 6) if self.seconds is not None else None,
            "attempts": attempts_json(self.attempts) if self.attempts is not None else None,
            "resize": self.resize.to_json() if self.resize is not None else None,
            "conductor": self.conductor}
        data.update({k: v for k, v in optional.items() if v is not None})
        return data

    def for_user(self, floor: Floor) -> dict[str, Any]:
        """The record without host identities: constraints, counts (none below
        ``floor``) and the error in the user's words stay; the hosts tried, the
        alternates and the hosts each constraint excluded go."""
        shown = without_hosts(self.to_json(), SchedulingRecord)
        for name in ("candidates", "hosts_passing_filters"):
            if name in shown:
                shown[name] = floor.count(shown[name])
        shown.pop("error_for_user", None)
        if self.error is not None:
            shown["error"] = self.error_for_user or self.error
        if self.attempts is not None:
            shown["attempts"] = [a.for_user() for a in self.attempts]
        if self.decisions is not None:
            shown["decisions"] = decisions_for_user(self.decisions.to_json(), floor)
        if self.resize is not None:
            shown["resize"] = without_hosts(self.resize.to_json(), ResizeRecord)
        return shown

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SchedulingRecord:
        attempts = data.get("attempts")
        alternates = data.get("alternates")
        return cls(
            operation=str(data.get("operation", "")),
            filters=records_from_json(data.get("filters") or ()),
            candidates=data.get("candidates"),
            hosts_passing_filters=data.get("hosts_passing_filters"),
            alternates=tuple(alternates) if alternates is not None else None,
            decisions=(Decisions.from_json(data["decisions"]) if data.get("decisions")
                       else None),
            error=data.get("error"), error_for_user=data.get("error_for_user"),
            seconds=data.get("seconds"),
            attempts=attempts_from_json(attempts) if attempts is not None else None,
            resize=ResizeRecord.from_json(data["resize"]) if data.get("resize") else None,
            conductor=data.get("conductor"))
