"""Input that used to be a 500 from the compute API, on SQLite and PostgreSQL: ids
written with non-ASCII digits ("³".isdigit() is true, int("³") fails), ids beyond a
database integer, and NUL characters anywhere (PostgreSQL cannot store them)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.api_fixtures import ComputeApi, start_compute_api, stop_compute_api


@pytest.fixture(params=["sqlite", "postgresql"])
def api(request: pytest.FixtureRequest, tmp_path: Path, placement: Any) -> Iterator[ComputeApi]:
    config: dict[str, dict[str, object]] = {}
    if request.param == "postgresql":
        config["database"] = {"connection": request.getfixturevalue("postgresql_url")}
    started = start_compute_api(tmp_path / "api", placement.url, config)
    yield started
    stop_compute_api(started)


@pytest.mark.parametrize("ident", ["³", "٣", "99999999999", "2147483648"])
def test_odd_ids_are_not_found(api: ComputeApi, ident: str) -> None:
    """As ids that do not exist: 404 where the id is read first (show, delete), a 4xx
    where the body is checked first, a 400 where the id is not of the form the
    microversion takes; never a 500."""
    assert api.admin("GET", f"/v2.1/os-aggregates/{ident}").status_code == 404
    assert api.admin("DELETE", f"/v2.1/os-aggregates/{ident}").status_code == 404
    # A service is named by its uuid from microversion 2.53 (anything else is a 400),
    # by an integer before (an integer no row has is a 404, anything else a 400).
    assert api.admin("DELETE", f"/v2.1/os-services/{ident}").status_code == 400
    older = api.admin("DELETE", f"/v2.1/os-services/{ident}",
                      headers={"OpenStack-API-Version": "compute 2.52"})
    assert older.status_code == (404 if ident.isascii() else 400), older.text
    for path in (f"/os-aggregates/{ident}", f"/os-services/{ident}"):
        response = api.admin("PUT", "/v2.1" + path, json={"status": "disabled"})
        assert 400 <= response.status_code < 500, (path, response.text)


def test_nul_characters_are_a_400_and_nothing_is_written(api: ComputeApi) -> None:
    created = api.admin("POST", "/v2.1/flavors", json={"flavor": {
        "name": "bad\x00name", "vcpus": 1, "ram": 512, "disk": 1}})
    assert created.status_code == 400, created.text
    assert "NUL characters are not allowed" in created.text
    assert api.admin("GET", "/v2.1/flavors").json()["flavors"] == []
    assert api.admin("GET", "/v2.1/images?name=%00").status_code == 400
    assert api.admin("GET", "/v2.1/os-services/a%00b").status_code == 400
    image = api.admin("POST", "/v2.1/images", json={
        "name": "img", "disk_format": "raw", "container_format": "bare",
        "properties": {"k\x00": "v"}})
    assert image.status_code == 400, image.text


def test_non_ascii_digits_are_not_numbers(api: ComputeApi) -> None:
    """int() reads "٣" as 3; the API reads only the digits 0-9 as numbers: a 400."""
    for path in ("/v2.1/servers?limit=٣", "/v2.1/servers/detail?limit=1²",
                 "/v2.1/flavors?minRam=٣", "/v2.1/flavors/detail?minDisk=٣"):
        assert api.admin("GET", path).status_code == 400, path
    refused = api.admin("POST", "/v2.1/flavors", json={"flavor": {
        "name": "digits", "vcpus": "٣", "ram": 512, "disk": 1}})
    assert refused.status_code == 400, refused.text
    assert "'vcpus'" in refused.json()["badRequest"]["message"]
    assert api.admin("GET", "/v2.1/flavors").json()["flavors"] == []
