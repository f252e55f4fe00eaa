"""A server's addresses, interfaces and volume attachments (moorage.api.handlers.
server_attachments): Moorage has no network or volume service, so each list is empty
as nova's is for a server without ports or volumes, an attach is refused saying why,
and another project's server is a 404, as on every server route."""

from __future__ import annotations

from typing import Any

import pytest

from tests.functional.servers.conftest import Cloud, fake_host

USER = "user1:project1"  # noauth2: a member of project1
OTHER = "user2:project2"
PORT = "3c3c6b43-0000-4c55-9bd5-1c2b0fd0c8a1"


@pytest.fixture
def cloud(make_cloud: Any) -> Cloud:
    cloud: Cloud = make_cloud([fake_host("a")])
    return cloud


# (method, path below the server, body, status, answer or words of the message)
STORY: list[tuple[str, str, Any, int, Any]] = [
    ("GET", "/ips", None, 200, {"addresses": {}}),
    ("GET", "/ips/public", None, 404, "Instance is not a member of specified network"),
    ("GET", "/os-interface", None, 200, {"interfaceAttachments": []}),
    ("POST", "/os-interface", {"interfaceAttachment": {"port_id": PORT}}, 400,
     "Moorage has no network service"),
    ("POST", "/os-interface", {"interfaceAttachment": {"port": PORT}}, 400, "'port'"),
    ("GET", "/os-volume_attachments", None, 200, {"volumeAttachments": []}),
    ("POST", "/os-volume_attachments", {"volumeAttachment": {"volumeId": PORT}}, 400,
     "Moorage has no volume service"),
    ("POST", "/os-volume_attachments", {"volumeAttachment": {}}, 400,
     "'volumeId' is a required property"),
]


def test_a_server_has_no_address_interface_or_volume(cloud: Cloud) -> None:
    response = cloud.call("POST", "/servers", {"server": {
        "name": "vm", "flavorRef": cloud.flavor("small"), "imageRef": cloud.image("raw", "raw"),
        "networks": "none"}}, token=USER)
    assert response.status_code == 202, response.text
    uuid = response.json()["server"]["id"]
    for method, path, body, status, answer in STORY:
        done = cloud.call(method, f"/servers/{uuid}{path}", body, token=USER)
        assert done.status_code == status, (method, path, done.text)
        if isinstance(answer, str):
            assert answer in done.text, (method, path, done.text)
        else:
            assert done.json() == answer, (method, path)
    for path in ("/ips", "/os-interface", "/os-volume_attachments"):
        hidden = cloud.call("GET", f"/servers/{uuid}{path}", token=OTHER)
        assert hidden.status_code == 404, hidden.text
        assert f"Instance {uuid} could not be found." in hidden.text
