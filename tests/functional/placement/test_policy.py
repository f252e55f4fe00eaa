"""Policy files: operators' overrides apply, and edits apply without a restart."""

from __future__ import annotations

import time
from pathlib import Path

from moorage.placement.launcher import PlacementProcess
from tests.conftest import PlacementClient


def test_policy_file_overrides_and_is_reread_when_edited(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text('"placement:resource_providers:list": "@"\n')
    server = PlacementProcess(
        tmp_path / "srv", config={"oslo_policy": {"policy_file": str(policy)}}).start()
    try:
        user = PlacementClient(server.url, token="someone")
        user.get("/resource_providers", expect=200)
        # Not overridden: still admin-only.
        user.get("/traits", expect=403)
        policy.write_text('"placement:resource_providers:list": "role:admin"\n')
        deadline = time.monotonic() + 10
        while user.get("/resource_providers").status_code != 403:
            assert time.monotonic() < deadline, "edited policy file never took effect"
            time.sleep(0.2)
        PlacementClient(server.url).get("/resource_providers", expect=200)
    finally:
        server.stop()


def test_admin_only_by_default(placement: PlacementClient) -> None:
    error = placement.get("/resource_providers", token="someone", expect=403).json()
    assert error["errors"][0]["detail"].endswith(
        "Policy does not allow placement:resource_providers:list to be performed.  ")
    placement.get("/resource_providers", token="someone", headers={"x-roles": "service"},
                  expect=200)
