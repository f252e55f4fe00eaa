"""A server's history row edited by hand into something that does not read back: the
API says which server and which field, as a 500 with nova's fault body and no
traceback, and the other servers still answer."""

from __future__ import annotations

import pytest

from moorage.lifecycle.schema import servers
from moorage.lifecycle.states import ServerStatus
from tests.api_fixtures import ComputeApi
from tests.lifecycle_paths import bring


@pytest.mark.parametrize(("column", "text"), [
    ("scheduling", "{not json"),
    ("attempts", '[{"result": "ok"}]'),  # no host: not what was written
    ("fault", '"a string, not a fault"'),
])
def test_a_corrupt_history_field_names_the_server_and_the_field(
        compute_api: ComputeApi, column: str, text: str) -> None:
    database = compute_api.state.database
    bring(database, "6a1f0c2e-5b3d-4e7f-9a80-1b2c3d4e5f60", (ServerStatus.ACTIVE, None))
    bring(database, "7b2f1d3e-6c4e-4f80-8b91-2c3d4e5f6a71", (ServerStatus.ACTIVE, None))
    with database.writer() as writer:
        writer.conn.execute(servers.update().where(
            servers.c.uuid == "6a1f0c2e-5b3d-4e7f-9a80-1b2c3d4e5f60").values({column: text}))
    broken = compute_api.admin("GET", "/v2.1/servers/6a1f0c2e-5b3d-4e7f-9a80-1b2c3d4e5f60")
    assert broken.status_code == 500
    message = broken.json()["computeFault"]["message"]
    assert message.startswith("server 6a1f0c2e-5b3d-4e7f-9a80-1b2c3d4e5f60: its stored "
                              f"{column} cannot be read"), message
    assert "Traceback" not in broken.text
    healthy = compute_api.admin("GET", "/v2.1/servers/7b2f1d3e-6c4e-4f80-8b91-2c3d4e5f6a71")
    assert healthy.status_code == 200, healthy.text
