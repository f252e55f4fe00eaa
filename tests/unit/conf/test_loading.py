"""Reading a configuration: files, --config-dir, every value checked at start in one
line, and where an application a WSGI server imported finds its files."""

from __future__ import annotations

from pathlib import Path

import pytest

from moorage.conf import InvalidOption, check_all_options, load_config
from moorage.conf.environment import deployed_config, deployed_files


def _file(path: Path, text: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(("text", "message"), [
    ("[placement]\nmax_allocation_candidates = lots\n",
     "[placement] max_allocation_candidates in {file}: invalid literal for int() with "
     "base 10: 'lots'; allowed: an integer"),
    ("[placement_server]\nworkers = 0\n",
     "[placement_server] workers in {file}: Should be greater than or equal to 1; "
     "allowed: an integer of at least 1"),
    ("[scheduler]\nimage_metadata_prefilter = sometimes\n",
     "[scheduler] image_metadata_prefilter in {file}: Unexpected boolean value "
     "'sometimes'; allowed: true or false (also yes/no, on/off, 1/0)"),
    ("[DEFAULT]\nreport_interval = soon\n",
     "[DEFAULT] report_interval in {file}: invalid literal for int() with base 10: "
     "'soon'; allowed: an integer of at least 1"),
])
def test_every_value_is_checked_in_one_line(tmp_path: Path, text: str,
                                            message: str) -> None:
    path = _file(tmp_path / "moorage.conf", text)
    conf = load_config([path])  # read lazily: loading alone does not see it
    with pytest.raises(InvalidOption) as refused:
        check_all_options(conf)
    assert str(refused.value) == message.format(file=path)


def test_a_good_configuration_passes_the_check(tmp_path: Path) -> None:
    path = _file(tmp_path / "moorage.conf",
                 "[placement]\nmax_allocation_candidates = 7\n[DEFAULT]\ndebug = on\n")
    check_all_options(load_config([path]))


def test_a_bad_command_line_option_in_a_file_is_one_line_not_an_exit(
        tmp_path: Path) -> None:
    # oslo.log's debug is a command-line option: argparse would print and exit.
    path = _file(tmp_path / "moorage.conf", "[DEFAULT]\ndebug = maybe\n")
    with pytest.raises(InvalidOption, match=r"^\[DEFAULT\] debug: Invalid Boolean value: "
                       r"maybe; allowed: true or false"):
        load_config([path])


def test_config_dirs_are_read_after_the_files_in_name_order(tmp_path: Path) -> None:
    first = _file(tmp_path / "moorage.conf", "[placement]\nmax_allocation_candidates = 1\n")
    _file(tmp_path / "d" / "20-late.conf", "[placement]\nmax_allocation_candidates = 3\n")
    _file(tmp_path / "d" / "10-early.conf", "[placement]\nmax_allocation_candidates = 2\n")
    _file(tmp_path / "d" / "ignored.txt", "[placement]\nmax_allocation_candidates = 9\n")
    conf = load_config([first], config_dirs=[str(tmp_path / "d")])
    assert conf.placement.max_allocation_candidates == 3


@pytest.mark.parametrize(("files", "dirs", "message"), [
    (["{tmp}/absent.conf"], [], "configuration file not found: {tmp}/absent.conf"),
    ([], ["{tmp}/absent.d"], "--config-dir {tmp}/absent.d: no such directory"),
    (["{tmp}/broken.conf"], [], "configuration file {tmp}/broken.conf: not an INI file: "
     "at {tmp}/broken.conf:1, No ':' or '=' found in assignment: 'no section here'"),
])
def test_files_that_cannot_be_read_are_named(tmp_path: Path, files: list[str],
                                             dirs: list[str], message: str) -> None:
    _file(tmp_path / "broken.conf", "no section here\n")
    with pytest.raises(ValueError) as refused:
        load_config([f.format(tmp=tmp_path) for f in files],
                    config_dirs=[d.format(tmp=tmp_path) for d in dirs])
    assert str(refused.value) == message.format(tmp=tmp_path)


@pytest.mark.parametrize(("environ", "placement", "files"), [
    ({}, False, ["/etc/moorage/moorage.conf"]),
    ({}, True, ["/etc/moorage/moorage.conf"]),
    ({"OS_PLACEMENT_CONFIG_DIR": "/etc/placement"}, True, ["/etc/placement/placement.conf"]),
    # Placement's variable is placement's alone.
    ({"OS_PLACEMENT_CONFIG_DIR": "/etc/placement"}, False, ["/etc/moorage/moorage.conf"]),
    ({"OS_MOORAGE_CONFIG_DIR": "/srv/conf"}, False, ["/srv/conf/moorage.conf"]),
    # nova's rule: ';'-separated names, relative to the directory (or absolute).
    ({"OS_MOORAGE_CONFIG_DIR": "/srv/conf",
      "OS_MOORAGE_CONFIG_FILES": "api.conf; /run/secrets/db.conf;"}, False,
     ["/srv/conf/api.conf", "/run/secrets/db.conf"]),
    ({"OS_PLACEMENT_CONFIG_DIR": " ", "OS_MOORAGE_CONFIG_FILES": "p.conf"}, True,
     ["/etc/moorage/p.conf"]),
])
def test_an_imported_application_finds_its_files_as_upstreams_do(
        environ: dict[str, str], placement: bool, files: list[str]) -> None:
    assert deployed_files(environ, placement=placement) == files


def test_upstreams_variables_win_over_a_launchers_export(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exported = _file(tmp_path / "exported.conf", "[placement]\nmax_allocation_candidates = 1\n")
    _file(tmp_path / "etc" / "moorage.conf", "[placement]\nmax_allocation_candidates = 2\n")
    for name in ("OS_PLACEMENT_CONFIG_DIR", "OS_MOORAGE_CONFIG_DIR", "OS_MOORAGE_CONFIG_FILES",
                 "MOORAGE_CONFIG_DIRS", "MOORAGE_CONFIG_OVERRIDES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MOORAGE_CONFIG_FILES", exported)
    assert deployed_config(placement=True).placement.max_allocation_candidates == 1
    monkeypatch.setenv("OS_MOORAGE_CONFIG_DIR", str(tmp_path / "etc"))
    assert deployed_config(placement=True).placement.max_allocation_candidates == 2


def test_nova_and_the_specs_names_are_read(tmp_path: Path) -> None:
    """A nova.conf's [api_database] connection, and the image-type spec's first name
    for its option, mean what they mean there."""
    conf = load_config([_file(tmp_path / "nova.conf",
                              "[api_database]\nconnection = sqlite:////srv/api.sqlite\n"
                              "[scheduler]\nfilter_hosts_by_image_type_support = true\n")])
    assert conf.database.connection == "sqlite:////srv/api.sqlite"
    assert conf.scheduler.query_placement_for_image_type_support is True
    both = load_config([_file(tmp_path / "both.conf",
                              "[api_database]\nconnection = sqlite:////srv/old.sqlite\n"
                              "[database]\nconnection = sqlite:////srv/new.sqlite\n")])
    assert both.database.connection == "sqlite:////srv/new.sqlite"
