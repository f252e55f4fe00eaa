"""Faults: why a server is in ERROR, in nova's shape, with what Moorage knows besides.

Pure functions from what went wrong to the ``fault`` a server shows, so the
messages users read are decided in one place and tested on their own.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping, Sequence
from typing import Any

from moorage.compute.client import SpawnFailed
from moorage.scheduler.types import NoValidHost

Fault = dict[str, Any]

# The fault's message as a user who may not see host identities reads it: the details
# carry it wherever the message names a host (or could: an exception's text).
USER_MESSAGE = "user_message"
# Details that name a host: a fault with any of them has a message that may, too.
_HOST_KEYS = frozenset({"host", "requested_host", "rejections", "attempts"})
# What a user reads for an agent that did not answer: its address is a host identity.
_UNREACHABLE = "the host's compute agent did not answer"


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def no_valid_host(exc: NoValidHost) -> Fault:
    """Scheduling found no host: the reason names the constraint that left none (and,
    checking a rebuild on the server's own host, that host: not in the user's form)."""
    details = dict(exc.details)
    details[USER_MESSAGE] = _without(str(exc), _hosts_named(exc))
    return {"code": 500, "message": str(exc), "details": details, "created": _now()}


def reason_for_user(exc: NoValidHost) -> str:
    """A NoValidHost's reason without the hosts it names (a rebuild checked on the
    server's own host, a requested host)."""
    return _without(exc.reason, _hosts_named(exc))


def _hosts_named(exc: NoValidHost) -> list[str]:
    details = exc.details
    named = [str(details[k]) for k in ("host", "requested_host") if details.get(k)]
    rejections = details.get("rejections")
    if isinstance(rejections, list):
        named += [str(r["host"]) for r in rejections if isinstance(r, Mapping) and r.get("host")]
    return named


def attempt_failed(host: str, node: str | None, exc: SpawnFailed) -> dict[str, Any]:
    """One failed spawn, as the server's attempt history records it."""
    return {"host": host, "node": node, "result": "failed", "kind": exc.kind,
            "message": exc.message, "feature": exc.feature}


def attempt_unreachable(host: str, node: str | None, message: str) -> dict[str, Any]:
    return {"host": host, "node": node, "result": "failed", "kind": "AgentUnreachable",
            "message": message, "feature": None}


def attempt_claim_lost(host: str, node: str | None) -> dict[str, Any]:
    """An alternate whose resources were taken meanwhile: it was never tried."""
    return {"host": host, "node": node, "result": "claim-failed", "kind": "ClaimFailed",
            "message": "the alternate's resources were taken by another consumer",
            "feature": None}


def attempt_interrupted(host: str, node: str | None, previous_owner: str | None
                        ) -> dict[str, Any]:
    """A spawn whose conductor stopped before it could tell how it ended; the guest, if
    any, was destroyed and the build went on elsewhere. The conductor's identity (its
    machine's name) is kept apart from the message: users do not see it."""
    return {"host": host, "node": node, "result": "interrupted", "kind": "Interrupted",
            "message": "the conductor building it stopped during the spawn; the build was "
                       "taken over", "feature": None, "conductor": previous_owner}


def attempt_ok(host: str, node: str | None) -> dict[str, Any]:
    return {"host": host, "node": node, "result": "ok", "kind": None, "message": None,
            "feature": None}


def build_failed(instance_uuid: str, attempts: Sequence[Mapping[str, Any]], *,
                 retries: bool) -> Fault:
    """The build ran out of hosts.

    With retries enabled (``[scheduler] max_attempts`` > 1 and no forced host) this is
    upstream's MaxRetriesExceeded; without, the fault is the one spawn failure, as
    upstream puts the instance in ERROR with the compute's exception. Either way the
    details list every host tried and why it failed, which upstream keeps only in the
    compute logs."""
    failed = [a for a in attempts if a.get("result") != "ok"]
    tried = [a for a in failed if a.get("result") == "failed"]
    if retries:
        message = (
            "Exceeded maximum number of retries. Exhausted all hosts available for "
            f"retrying build failures for instance {instance_uuid}."
        )
        user_message = message
        if tried:
            message += " " + "; ".join(_describe(a) for a in tried)
            user_message += " " + "; ".join(_describe_for_user(a) for a in tried)
        kind = "MaxRetriesExceeded"
    else:
        last = tried[-1] if tried else (failed[-1] if failed else None)
        kind = str(last.get("kind") or "BuildFailed") if last else "BuildFailed"
        message = (f"Build of instance {instance_uuid} failed: {_describe(last)}" if last
                   else f"Build of instance {instance_uuid} failed: no host could be tried")
        user_message = (f"Build of instance {instance_uuid} failed: "
                        + (_describe_for_user(last) if last else "no host could be tried"))
    return {"code": 500, "message": message, "created": _now(),
            "details": {"kind": kind, "attempts": list(failed),
                        USER_MESSAGE: user_message}}


def build_aborted(instance_uuid: str, attempt: Mapping[str, Any]) -> Fault:
    """A spawn failure another host would repeat: the build stops at once."""
    return {"code": 500, "created": _now(),
            "message": f"Build of instance {instance_uuid} aborted: {_describe(attempt)}",
            "details": {"kind": attempt.get("kind"), "attempts": [dict(attempt)],
                        USER_MESSAGE: f"Build of instance {instance_uuid} aborted: "
                                      f"{_describe_for_user(attempt)}"}}


def rebuild_failed(exc: SpawnFailed) -> Fault:
    return {"code": 500, "created": _now(),
            "message": f"Rebuild failed on {exc.host}: {exc.kind}: {exc.message}",
            "details": {"kind": exc.kind, "feature": exc.feature,
                        USER_MESSAGE: f"Rebuild failed: {exc.kind}: "
                                      f"{_without(exc.message, (exc.host,))}"}}


def internal_error(operation: str, exc: BaseException) -> Fault:
    """Something Moorage did not expect; the server must not stay in a task forever."""
    return {"code": 500, "created": _now(),
            "message": f"{operation} failed: {type(exc).__name__}: {exc}",
            "details": {"kind": type(exc).__name__,
                        USER_MESSAGE: f"{operation} failed: an internal error; an "
                                      "administrator can read what it was"}}


def abandoned(operation: str, takeovers: int) -> Fault:
    """An operation that killed every conductor that carried it out: taken over more
    than ``[conductor] max_takeovers`` times, it is given up rather than tried again."""
    message = (f"{operation} abandoned: the conductors carrying it out stopped "
               f"{takeovers} times ([conductor] max_takeovers); the server was put in "
               "ERROR rather than tried again")
    return {"code": 500, "created": _now(), "message": message,
            "details": {"kind": "OperationAbandoned", "takeovers": takeovers,
                        USER_MESSAGE: message}}


def _describe(attempt: Mapping[str, Any]) -> str:
    text = f"{attempt.get('host')}: {attempt.get('kind')}: {attempt.get('message')}"
    if attempt.get("feature"):
        text += f" (feature {attempt['feature']})"
    return text


def _describe_for_user(attempt: Mapping[str, Any]) -> str:
    """An attempt as its owner may read it: what failed and why, not where."""
    if attempt.get("kind") == "AgentUnreachable":
        return f"AgentUnreachable: {_UNREACHABLE}"
    names = tuple(str(attempt[k]) for k in ("host", "node") if attempt.get(k))
    text = f"{attempt.get('kind')}: {_without(str(attempt.get('message')), names)}"
    if attempt.get("feature"):
        text += f" (feature {attempt['feature']})"
    return text


def attempt_for_user(attempt: Mapping[str, Any]) -> dict[str, Any]:
    """An attempt of the server's history as its owner may read it: its result, kind
    and feature, its message without the host (and none for an agent that did not
    answer: the message is its address)."""
    shown = {k: v for k, v in attempt.items() if k not in ("host", "node", "conductor")}
    if attempt.get("kind") == "AgentUnreachable":
        shown["message"] = _UNREACHABLE
    elif isinstance(attempt.get("message"), str):
        names = tuple(str(attempt[k]) for k in ("host", "node") if attempt.get(k))
        shown["message"] = _without(attempt["message"], names)
    return shown


def _without(text: str, names: Sequence[str]) -> str:
    """``text`` with each of ``names`` (as a whole word) replaced by "the host": a
    driver's message may name the machine it ran on."""
    for name in names:
        if name:
            text = re.sub(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", "the host", text)
    return text


def for_user(fault: Mapping[str, Any]) -> Fault:
    """A fault as a user who may not see host identities reads it: the message without
    hosts (a fault recorded before messages were kept in both forms reads as a bare
    failure of its kind) and the details reduced to what names no host: the kind, the
    candidate counts and the decisions, themselves stripped by the caller."""
    details = fault.get("details") or {}
    kind = details.get("kind")
    if USER_MESSAGE in details:
        message = str(details[USER_MESSAGE])
    elif "decisions" in details and not _HOST_KEYS & details.keys():
        message = str(fault.get("message", ""))  # scheduling's counts: no host in it
    else:
        message = f"{kind} failed" if kind else "The operation failed"
    kept: dict[str, Any] = {k: details[k] for k in ("kind", "candidates") if k in details}
    return {**fault, "message": message, "details": kept}
