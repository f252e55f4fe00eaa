"""moorage.run.watcher: one poller of the compute API tells many waiters when their
servers came to rest, over a real compute API."""

from __future__ import annotations

from typing import Any

from moorage.run.watcher import ServerWatcher
from tests.functional.servers.conftest import Cloud, fake_host


def test_waiters_learn_how_their_servers_ended(make_cloud: Any) -> None:
    cloud: Cloud = make_cloud([fake_host("a")])
    image = cloud.image("raw", "raw")
    watcher = ServerWatcher(cloud.api_url).start()
    try:
        built = cloud.boot(cloud.flavor("small"), image)
        refused = cloud.boot(cloud.flavor("huge", vcpus=4096), image)
        ended = {uuid: watcher.wait(uuid, 60) for uuid in (built, refused)}
        assert {uuid: server and server["status"] for uuid, server in ended.items()} == {
            built: "ACTIVE", refused: "ERROR"}
        assert ended[built] is not None and ended[built]["OS-EXT-SRV-ATTR:host"] == "a"

    finally:
        watcher.stop()

    # A deleted server is in no answer of a poll for the statuses at rest: it is found
    # by looking at it alone (404), and its waiter gets None. (A new watcher: one that
    # saw the server ACTIVE may hand that back to a second wait, see ServerWatcher.)
    assert cloud.call("DELETE", f"/servers/{built}").status_code == 204
    assert cloud.wait(built)["status"] == "DELETED"
    watcher = ServerWatcher(cloud.api_url).start()
    try:
        assert watcher.wait(built, 30) is None
    finally:
        watcher.stop()
