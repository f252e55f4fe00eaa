"""The compute API's default policy, persona by persona, as nova's current defaults
decide: a project's reader reads its servers, its member writes them, another
project's member does neither, the administrator does everything and alone
administers. Keystone puts the implied roles in its tokens (a member's token says
member and reader), and noauth2 gives a user both, so the personas are the role sets
a token carries."""

from __future__ import annotations

import pytest

from moorage.api.context import RequestContext
from moorage.api.policy import Policy, list_rules
from moorage.conf import load_config

PROJECT = "project-a"
OWNER = "alice"
READER = RequestContext("rita", PROJECT, ("reader",))
MEMBER = RequestContext(OWNER, PROJECT, ("member", "reader"))
STRANGER = RequestContext("bob", "project-b", ("member", "reader"))
ADMIN = RequestContext("root", "admin-project", ("admin", "manager", "member", "reader"))
PERSONAS = {"reader": READER, "member": MEMBER, "stranger": STRANGER, "admin": ADMIN}

# (rule, the personas it allows) on a server of project-a owned by alice.
CASES = [
    ("os_compute_api:servers:index", {"reader", "member", "admin"}),
    ("os_compute_api:servers:show", {"reader", "member", "admin"}),
    ("os_compute_api:server-metadata:index", {"reader", "member", "admin"}),
    ("os_compute_api:os-server-tags:show", {"reader", "member", "admin"}),
    ("os_compute_api:servers:create", {"member", "admin"}),
    ("os_compute_api:servers:update", {"member", "admin"}),
    ("os_compute_api:servers:delete", {"member", "admin"}),
    ("os_compute_api:servers:resize", {"member", "admin"}),
    ("os_compute_api:server-metadata:update_all", {"member", "admin"}),
    ("os_compute_api:os-server-tags:update", {"member", "admin"}),
    ("moorage:scheduler:plan", {"member", "admin"}),
    ("moorage:scheduler:hosts", {"admin"}),
    ("os_compute_api:servers:index:get_all_tenants", {"admin"}),
    ("os_compute_api:servers:show:host_status", {"admin"}),
    ("os_compute_api:servers:create:forced_host", {"admin"}),
    ("os_compute_api:os-migrate-server:migrate", {"admin"}),
    ("os_compute_api:os-flavor-manage:create", {"admin"}),
    ("os_compute_api:os-services:list", {"admin"}),
    ("os_compute_api:os-aggregates:index", {"admin"}),
    # A key pair is its user's, whatever the project.
    ("os_compute_api:os-keypairs:index", {"member", "admin"}),
]


@pytest.fixture(scope="module")
def policy() -> Policy:
    return Policy(load_config())


@pytest.mark.parametrize(("rule", "allowed"), CASES, ids=[rule for rule, _ in CASES])
def test_who_may(policy: Policy, rule: str, allowed: set[str]) -> None:
    target = {"project_id": PROJECT, "user_id": OWNER}
    decided = {name for name, context in PERSONAS.items()
               if policy.allows(rule, context, target)}
    assert decided == allowed


def test_the_base_rules_are_novas() -> None:
    defaults = {rule.name: rule.check_str for rule in list_rules()}
    assert defaults["project_reader_api"] == "role:reader and project_id:%(project_id)s"
    assert defaults["project_member_api"] == "role:member and project_id:%(project_id)s"
    assert defaults["project_reader_or_admin"] == (
        "rule:project_reader_api or rule:context_is_admin")
    assert defaults["context_is_admin"] == "role:admin"


def test_a_member_reads_a_flavors_extra_specs_and_a_roleless_caller_does_not(
        policy: Policy) -> None:
    rule = "os_compute_api:os-flavor-extra-specs:index"
    assert policy.allows(rule, MEMBER)
    assert not policy.allows(rule, RequestContext("nobody", PROJECT, ()))


def test_a_remembered_decision_is_its_callers_alone(policy: Policy) -> None:
    """Decisions are remembered under the caller itself: the same ids with other roles
    are another caller, and an equal context built anew is the same one."""
    rule = "os_compute_api:servers:delete"
    target = {"project_id": PROJECT, "user_id": OWNER}
    assert policy.allows(rule, MEMBER, target)
    assert not policy.allows(rule, RequestContext(OWNER, PROJECT, ("reader",)), target)
    assert policy.allows(rule, RequestContext(OWNER, PROJECT, ("member", "reader")), target)
    # The same target built in another order is asked again, with the same answer.
    assert policy.allows(rule, MEMBER, {"user_id": OWNER, "project_id": PROJECT})
    assert not policy.allows(rule, MEMBER, {"project_id": "project-b", "user_id": OWNER})


class _State:
    """What ApiRequest.allows reads of the API's state: its policy."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy


def test_a_request_asks_the_policy_once_per_question_and_again_for_a_new_caller(
        policy: Policy, monkeypatch: pytest.MonkeyPatch) -> None:
    from moorage.api.http import ApiRequest
    asked: list[str] = []
    real = policy.allows

    def counting(rule: str, context: RequestContext, target: object = None) -> bool:
        asked.append(rule)
        return real(rule, context, target)  # type: ignore[arg-type]

    monkeypatch.setattr(policy, "allows", counting)
    req = ApiRequest({"REQUEST_METHOD": "GET"}, _State(policy))  # type: ignore[arg-type]
    rule = "os_compute_api:servers:show:host_status"
    mine = {"project_id": PROJECT, "user_id": OWNER}
    req.context = MEMBER
    # A list of many servers of one owner: one question.
    assert [req.allows(rule, dict(mine)) for _ in range(3)] == [False] * 3
    assert req.sees_hosts(dict(mine)) is False
    assert asked == [rule]
    # Another owner is another question.
    assert req.allows(rule, {"project_id": "project-b", "user_id": "bob"}) is False
    assert len(asked) == 2
    # Authentication naming another caller: the answers were the previous caller's.
    req.context = ADMIN
    assert req.allows(rule, dict(mine)) is True
    assert len(asked) == 3
    # A target the memo cannot key (a list in it) is asked every time.
    listed = {"project_id": PROJECT, "roles": ["member"]}
    req.allows("os_compute_api:servers:show", listed)
    req.allows("os_compute_api:servers:show", listed)
    assert len(asked) == 5
