"""A server's live migrations in progress (moorage.api.handlers.server_migrations):
from 2.23 an empty list (Moorage makes no live migration) and nova's 404 for one asked
by id; before 2.23 no route; another project's server is a 404, and the list is a
manager's or an admin's (nova's policy)."""

from __future__ import annotations

from typing import Any

from tests.functional.servers.conftest import Cloud, fake_host

ADMIN = "admin"  # noauth2: an administrator
USER = "user1:project1"  # a member of project1
OTHER = "user2:project2"


def test_a_server_has_no_live_migration_in_progress(make_cloud: Any) -> None:
    cloud: Cloud = make_cloud([fake_host("a")])
    response = cloud.call("POST", "/servers", {"server": {
        "name": "vm", "flavorRef": cloud.flavor("small"), "imageRef": cloud.image("raw", "raw"),
        "networks": "none"}}, token=USER)
    assert response.status_code == 202, response.text
    uuid = response.json()["server"]["id"]

    def ask(path: str, version: str, token: str = ADMIN) -> Any:
        return cloud.call("GET", f"/servers/{uuid}{path}", token=token, version=version)

    listed = ask("/migrations", "2.23")
    assert (listed.status_code, listed.json()) == (200, {"migrations": []}), listed.text
    assert ask("/migrations", "2.22").status_code == 404
    one = ask("/migrations/7", "2.80")
    assert one.status_code == 404, one.text
    assert f"In-progress live migration 7 is not found for server {uuid}." in one.text
    # nova's policy: a project's manager or an admin lists; a member is refused.
    assert ask("/migrations", "2.23", USER).status_code == 403
    hidden = ask("/migrations", "2.23", OTHER)
    assert hidden.status_code == 404, hidden.text
