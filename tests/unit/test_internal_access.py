"""The rule of the internal routes: a table of cases, one assertion each."""

from __future__ import annotations

import pytest

from moorage.conf import load_config
from moorage.internal_access import InternalAccess

TOKEN = "s3cret"
GUARDED = InternalAccess(TOKEN)
GUARDED_AND_FLAGGED = InternalAccess(TOKEN, anonymous_writes=True)
CLOSED = InternalAccess(None)
DEVELOPMENT = InternalAccess(None, anonymous_writes=True)


@pytest.mark.parametrize(("access", "method", "given", "admitted"), [
    (GUARDED, "GET", TOKEN, True),
    (GUARDED, "PUT", TOKEN, True),
    (GUARDED, "GET", None, False),  # a token, once set, guards reads too
    (GUARDED, "POST", "wrong", False),
    (GUARDED, "DELETE", "", False),
    (GUARDED_AND_FLAGGED, "POST", None, False),  # the flag opens nothing then
    (CLOSED, "GET", None, True),
    (CLOSED, "HEAD", None, True),
    (CLOSED, "get", None, True),
    (CLOSED, "PUT", None, False),
    (CLOSED, "POST", "anything", False),
    (CLOSED, "DELETE", None, False),
    (CLOSED, "PATCH", None, False),
    (DEVELOPMENT, "PUT", None, True),
    (DEVELOPMENT, "DELETE", None, True),
])
def test_who_is_admitted(access: InternalAccess, method: str, given: str | None,
                         admitted: bool) -> None:
    assert (access.refusal(method, given) is None) is admitted


def test_a_refused_write_names_what_to_set() -> None:
    message = CLOSED.refusal("post", None)
    assert message is not None and message.startswith("anonymous POST refused")
    assert "[DEFAULT] service_token" in message
    assert "[DEFAULT] allow_anonymous_internal_writes = true" in message
    assert GUARDED.refusal("GET", None) == (
        "a valid X-Service-Token header is required ([DEFAULT] service_token)")


@pytest.mark.parametrize(("access", "expected"), [
    (GUARDED, None),
    (CLOSED, "svc: [DEFAULT] service_token is unset: spawns are refused (401) until it is "
             "set, the same on every service (DEVELOPMENT ONLY: [DEFAULT] "
             "allow_anonymous_internal_writes = true opens them)"),
    (DEVELOPMENT, "svc: [DEFAULT] service_token is unset and [DEFAULT] "
                  "allow_anonymous_internal_writes is on: anyone who can reach it may make "
                  "spawns. DEVELOPMENT ONLY; set service_token in production"),
])
def test_the_start_warning_is_one_line(access: InternalAccess, expected: str | None) -> None:
    assert access.start_warning("svc", "spawns") == expected


@pytest.mark.parametrize(("overrides", "expected"), [
    ([], CLOSED),
    ([("DEFAULT", "service_token", "")], CLOSED),
    ([("DEFAULT", "service_token", TOKEN)], GUARDED),
    ([("DEFAULT", "allow_anonymous_internal_writes", True)], DEVELOPMENT),
])
def test_read_from_the_configuration(overrides: list[tuple[str, str, object]],
                                     expected: InternalAccess) -> None:
    assert InternalAccess.of(load_config([], overrides)) == expected
