"""The services as an operator deploys OpenStack's: gunicorn imports
``moorage.wsgi.placement:application`` and ``moorage.wsgi.compute_api:application``,
configured by upstream's environment variables, behind a TLS-terminating proxy; a bad
option or an unsynced database stops the worker with one line naming it. And the
services' own launchers: ``--config-dir``, and every option checked before listening."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
import requests

from moorage.placement.launcher import ServerProcess

# gunicorn, dying with the test run as every server a test starts does (supervision).
GUNICORN = ("import sys; from moorage.supervision import die_with_parent; "
            "die_with_parent(); from gunicorn.app.wsgiapp import run; "
            "sys.argv[0] = 'gunicorn'; sys.exit(run())")


class Gunicorn(ServerProcess):
    """``gunicorn TARGET``, one worker, with ``variables`` in its environment."""

    name = "gunicorn"

    def __init__(self, workdir: Path, target: str, variables: Mapping[str, str],
                 probe: str = "/") -> None:
        super().__init__(workdir)
        self.target = target
        self.variables = dict(variables)
        self.probe = probe

    def command(self) -> list[str]:
        return [sys.executable, "-c", GUNICORN, "--bind", f"{self.host}:{self.port}",
                "--workers", "1", "--timeout", "60", self.target]

    def environment(self) -> dict[str, str]:
        # Only the variables given choose the configuration: none a launcher of this
        # test process may have exported (MOORAGE_CONFIG_FILES...).
        inherited = {name: value for name, value in super().environment().items()
                     if not name.startswith(("MOORAGE_CONFIG_", "OS_MOORAGE_", "OS_PLACEMENT_"))}
        return {**inherited, **self.variables}

    def ready(self) -> bool:
        try:
            return requests.get(self.url + self.probe, timeout=1).status_code == 200
        except requests.RequestException:
            return False

    def exit_code(self, timeout: float) -> int:
        """The status it exited with, waiting ``timeout`` seconds at most."""
        assert self._process is not None
        return self._process.wait(timeout=timeout)


def _write(path: Path, sections: Mapping[str, Mapping[str, object]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(
        f"[{name}]\n" + "".join(f"{key} = {value}\n" for key, value in options.items())
        for name, options in sections.items()))
    return path


def _placement_conf(tmp_path: Path, **more: Mapping[str, object]) -> Path:
    """A directory holding placement.conf (upstream's OS_PLACEMENT_CONFIG_DIR)."""
    directory = tmp_path / "etc-placement"
    _write(directory / "placement.conf", {
        "api": {"auth_strategy": "noauth2"},
        "placement_database": {"connection": f"sqlite:///{tmp_path / 'placement.sqlite'}"},
        **more})
    return directory


@pytest.fixture
def placement_under_gunicorn(tmp_path: Path) -> Iterator[Gunicorn]:
    directory = _placement_conf(
        tmp_path, oslo_middleware={"enable_proxy_headers_parsing": "true"})
    with Gunicorn(tmp_path / "gunicorn", "moorage.wsgi.placement:application",
                  {"OS_PLACEMENT_CONFIG_DIR": str(directory)}) as server:
        yield server


def test_gunicorn_serves_placement_from_its_application(
        placement_under_gunicorn: Gunicorn) -> None:
    url = placement_under_gunicorn.url
    admin = {"X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.19"}
    root = requests.get(url + "/", timeout=10).json()
    assert root["versions"][0]["max_version"].startswith("1.")
    made = requests.post(url + "/resource_providers", json={"name": "cn1"}, headers=admin,
                         timeout=10)
    assert made.status_code == 201, made.text
    # No proxy in front: the Location names the server itself.
    assert made.headers["Location"].startswith(url + "/resource_providers/")
    listed = requests.get(url + "/resource_providers", headers=admin, timeout=10).json()
    assert [p["name"] for p in listed["resource_providers"]] == ["cn1"]


def test_behind_a_tls_proxy_placement_answers_with_the_proxys_url(
        placement_under_gunicorn: Gunicorn) -> None:
    url = placement_under_gunicorn.url
    made = requests.post(url + "/resource_providers", json={"name": "cn2"}, timeout=10,
                         headers={"X-Auth-Token": "admin",
                                  "OpenStack-API-Version": "placement 1.19",
                                  "X-Forwarded-Proto": "https",
                                  "X-Forwarded-Host": "placement.example.com",
                                  "X-Forwarded-Prefix": "/placement"})
    assert made.status_code == 201, made.text
    assert made.headers["Location"].startswith(
        "https://placement.example.com/placement/resource_providers/")


def test_gunicorn_serves_the_compute_api_from_its_application(tmp_path: Path) -> None:
    etc = tmp_path / "etc-moorage"
    _write(etc / "api.conf", {
        "api": {"auth_strategy": "noauth2"},
        "database": {"connection": f"sqlite:///{tmp_path / 'api.sqlite'}"},
        # Work is recorded, and left to a conductor of its own: no placement here.
        "conductor": {"run_in_api": "false"},
        "oslo_middleware": {"enable_proxy_headers_parsing": "true"}})
    variables = {"OS_MOORAGE_CONFIG_DIR": str(etc), "OS_MOORAGE_CONFIG_FILES": "api.conf"}
    with Gunicorn(tmp_path / "gunicorn", "moorage.wsgi.compute_api:application",
                  variables) as server:
        admin = {"X-Auth-Token": "admin", "OpenStack-API-Version": "compute 2.1"}
        made = requests.post(server.url + "/v2.1/flavors", headers=admin, timeout=10, json={
            "flavor": {"name": "m1", "vcpus": 1, "ram": 512, "disk": 1}})
        assert made.status_code == 200, made.text
        plain = requests.get(server.url + "/v2.1/flavors", headers=admin, timeout=10).json()
        assert [f["name"] for f in plain["flavors"]] == ["m1"]
        assert plain["flavors"][0]["links"][0]["href"].startswith(server.url + "/v2.1/")
        proxied = requests.get(server.url + "/v2.1/flavors", timeout=10, headers={
            **admin, "X-Forwarded-Proto": "https",
            "X-Forwarded-Host": "cloud.example.com"}).json()
        assert proxied["flavors"][0]["links"][0]["href"].startswith(
            "https://cloud.example.com/v2.1/")


def _refused(tmp_path: Path, target: str, variables: Mapping[str, str]) -> str:
    """What gunicorn printed when the application refused to start; it must exit."""
    server = Gunicorn(tmp_path / "gunicorn", target, variables)
    server.launch()
    try:
        assert server.exit_code(timeout=60) != 0
    except subprocess.TimeoutExpired:
        server.stop()
        pytest.fail(f"gunicorn kept running with an application that cannot start:\n"
                    f"{server.output()}")
    return server.output()


def test_a_bad_option_stops_the_worker_with_one_line_naming_it(tmp_path: Path) -> None:
    directory = _placement_conf(tmp_path, placement={"max_allocation_candidates": "lots"})
    output = _refused(tmp_path, "moorage.wsgi.placement:application",
                      {"OS_PLACEMENT_CONFIG_DIR": str(directory)})
    line = (f"placement cannot start: [placement] max_allocation_candidates in "
            f"{directory / 'placement.conf'}: invalid literal for int() with base 10: "
            f"'lots'; allowed: an integer")
    assert line in output


def test_a_database_not_synced_is_named_with_the_command_that_syncs_it(
        tmp_path: Path) -> None:
    directory = _placement_conf(tmp_path,
                                placement_database={"sync_on_startup": "false"})
    output = _refused(tmp_path, "moorage.wsgi.placement:application",
                      {"OS_PLACEMENT_CONFIG_DIR": str(directory)})
    assert ("placement cannot start: the placement database is empty (no schema); this "
            "Moorage needs revision") in output
    assert "run `moorage placement db sync` first" in output


def test_a_missing_configuration_file_is_named_with_what_chose_it(tmp_path: Path) -> None:
    output = _refused(tmp_path, "moorage.wsgi.compute_api:application",
                      {"OS_MOORAGE_CONFIG_DIR": str(tmp_path / "nowhere")})
    assert (f"the compute API cannot start: configuration file not found: "
            f"{tmp_path / 'nowhere' / 'moorage.conf'} (chosen by OS_MOORAGE_CONFIG_DIR, "
            f"OS_MOORAGE_CONFIG_FILES)") in output


def _moorage(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "moorage", *argv], capture_output=True,
                          text=True, timeout=120)


def test_placement_serve_refuses_a_bad_value_before_listening(tmp_path: Path) -> None:
    conf = _write(tmp_path / "placement.conf", {
        "api": {"auth_strategy": "noauth2"},
        "placement_database": {"connection": f"sqlite:///{tmp_path / 'p.sqlite'}"},
        "placement_server": {"port": 0, "workers": "0"}})
    done = _moorage("placement", "serve", "--config-file", str(conf))
    assert done.returncode == 1
    assert done.stderr.strip() == (
        f"[placement_server] workers in {conf}: Should be greater than or equal to 1; "
        f"allowed: an integer of at least 1")
    assert not (tmp_path / "p.sqlite").exists()  # refused before anything was done


def test_config_dir_is_read_after_the_files(tmp_path: Path) -> None:
    first = _write(tmp_path / "placement.conf", {
        "placement_database": {"connection": f"sqlite:///{tmp_path / 'first.sqlite'}"}})
    _write(tmp_path / "placement.conf.d" / "10-database.conf", {
        "placement_database": {"connection": f"sqlite:///{tmp_path / 'second.sqlite'}"}})
    done = _moorage("placement", "db", "sync", "--config-file", str(first),
                    "--config-dir", str(tmp_path / "placement.conf.d"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "second.sqlite").exists() and not (tmp_path / "first.sqlite").exists()
    missing = _moorage("placement", "db", "sync", "--config-dir", str(tmp_path / "nope"))
    assert missing.returncode == 1
    assert missing.stderr.strip() == f"--config-dir {tmp_path / 'nope'}: no such directory"

