"""Faults: why a server is in ERROR, in nova's shape, with what Moorage knows besides.

Pure functions from what went wrong to the ``fault`` a server shows, so the
messages users read are decided in one place and tested on their own.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import Any

from moorage.compute.client import SpawnFailed
from moorage.scheduler.types import NoValidHost

Fault = dict[str, Any]


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def no_valid_host(exc: NoValidHost) -> Fault:
    """Scheduling found no host: the reason names the constraint that left none."""
    return {"code": 500, "message": str(exc), "details": exc.details, "created": _now()}


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
    any, was destroyed and the build went on elsewhere."""
    return {"host": host, "node": node, "result": "interrupted", "kind": "Interrupted",
            "message": f"the conductor building it ({previous_owner}) stopped during the "
                       "spawn; the build was taken over", "feature": None}


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
        if tried:
            message += " " + "; ".join(_describe(a) for a in tried)
        kind = "MaxRetriesExceeded"
    else:
        last = tried[-1] if tried else (failed[-1] if failed else None)
        kind = str(last.get("kind") or "BuildFailed") if last else "BuildFailed"
        message = (f"Build of instance {instance_uuid} failed: {_describe(last)}" if last
                   else f"Build of instance {instance_uuid} failed: no host could be tried")
    return {"code": 500, "message": message, "created": _now(),
            "details": {"kind": kind, "attempts": list(failed)}}


def build_aborted(instance_uuid: str, attempt: Mapping[str, Any]) -> Fault:
    """A spawn failure another host would repeat: the build stops at once."""
    return {"code": 500, "created": _now(),
            "message": f"Build of instance {instance_uuid} aborted: {_describe(attempt)}",
            "details": {"kind": attempt.get("kind"), "attempts": [dict(attempt)]}}


def rebuild_failed(exc: SpawnFailed) -> Fault:
    return {"code": 500, "created": _now(),
            "message": f"Rebuild failed on {exc.host}: {exc.kind}: {exc.message}",
            "details": {"kind": exc.kind, "feature": exc.feature}}


def internal_error(operation: str, exc: BaseException) -> Fault:
    """Something Moorage did not expect; the server must not stay in a task forever."""
    return {"code": 500, "created": _now(),
            "message": f"{operation} failed: {type(exc).__name__}: {exc}",
            "details": {"kind": type(exc).__name__}}


def _describe(attempt: Mapping[str, Any]) -> str:
    text = f"{attempt.get('host')}: {attempt.get('kind')}: {attempt.get('message')}"
    if attempt.get("feature"):
        text += f" (feature {attempt['feature']})"
    return text
