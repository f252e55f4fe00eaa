"""Argument parsing of the compute API commands: KEY=VALUE items, host switches,
finding things by name or id, and the one-line errors for bad input (which never
reach the API: the URL given cannot be connected to)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

import pytest

from moorage.api.client import ComputeApiError, Json, error_message
from moorage.cli.api_options import find, key_values, keys
from moorage.cli.host import service_changes
from tests.cli_runner import run_moorage

# Nothing listens here: a command that reached for the API would say so instead.
NOWHERE = "http://127.0.0.1:9"
Moorage = Callable[..., tuple[int, str, str]]


@pytest.mark.parametrize(("texts", "expected"), [
    ([], {}),
    (["hw_vif_model=e1000"], {"hw_vif_model": "e1000"}),
    (["trait:HW_CPU_X86_AVX2=required", "resources:VCPU=0"],
     {"trait:HW_CPU_X86_AVX2": "required", "resources:VCPU": "0"}),
    (["a=b=c"], {"a": "b=c"}),          # the first = splits
    (["empty="], {"empty": ""}),
    (["k=1", "k=2"], {"k": "2"}),        # the last one wins
])
def test_key_values(texts: list[str], expected: dict[str, str]) -> None:
    assert key_values(texts) == expected


@pytest.mark.parametrize("text", ["novalue", "=v", " =v"])
def test_key_values_refuses(text: str) -> None:
    with pytest.raises(ValueError, match=f"--property expects KEY=VALUE, got '{text}'"):
        key_values([text])


def test_keys() -> None:
    assert keys(["a", " b "]) == ["a", "b"]
    with pytest.raises(ValueError, match="expects a KEY alone here, got 'a=b'"):
        keys(["a=b"])


def namespace(**given: object) -> argparse.Namespace:
    args: dict[str, object] = {"disable": False, "enable": False, "reason": None,
                               "force_down": False, "unforce_down": False}
    args.update(given)
    return argparse.Namespace(**args)


@pytest.mark.parametrize(("given", "expected"), [
    ({"disable": True}, {"status": "disabled"}),
    ({"disable": True, "reason": "maintenance"},
     {"status": "disabled", "disabled_reason": "maintenance"}),
    ({"enable": True}, {"status": "enabled"}),
    ({"force_down": True}, {"forced_down": True}),
    ({"unforce_down": True}, {"forced_down": False}),
    ({"disable": True, "force_down": True}, {"status": "disabled", "forced_down": True}),
])
def test_service_changes(given: dict[str, object], expected: dict[str, object]) -> None:
    assert service_changes(namespace(**given)) == expected


@pytest.mark.parametrize(("given", "message"), [
    ({}, "nothing to set"),
    ({"reason": "why"}, "--reason goes with --disable"),
    ({"enable": True, "reason": "why"}, "--reason goes with --disable"),
])
def test_service_changes_refuses(given: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        service_changes(namespace(**given))


# -- find by name or id ----------------------------------------------------------------------
ITEMS: list[Json] = [{"id": "1", "name": "small"}, {"id": "2", "name": "twin"},
                     {"id": "3", "name": "twin"}, {"id": "4", "name": "1"}]


def by_id(ref: str) -> Json:
    for item in ITEMS:
        if item["id"] == ref:
            return item
    raise ComputeApiError(f"GET /flavors/{ref}: 404 Not Found: no flavor {ref}", 404)


@pytest.mark.parametrize(("ref", "expected"), [
    ("1", "1"),       # an id wins over a name
    ("small", "1"),
    ("4", "4"),
])
def test_find(ref: str, expected: str) -> None:
    assert find("flavor", ref, by_id, lambda: ITEMS)["id"] == expected


def test_find_none_and_several() -> None:
    with pytest.raises(ComputeApiError, match=r"^No flavor with a name or ID of 'big' exists"):
        find("flavor", "big", by_id, lambda: ITEMS)
    with pytest.raises(ComputeApiError,
                       match=r"^More than one flavor exists with the name 'twin'; use its "
                       r"ID \(2, 3\)"):
        find("flavor", "twin", by_id, lambda: ITEMS)


def test_find_does_not_hide_other_errors() -> None:
    def forbidden(ref: str) -> Json:
        raise ComputeApiError("GET /flavors/x: 403 Forbidden: not allowed", 403)

    with pytest.raises(ComputeApiError, match="403 Forbidden"):
        find("flavor", "x", forbidden, lambda: ITEMS)


# -- error bodies ----------------------------------------------------------------------
@pytest.mark.parametrize(("body", "message"), [
    (b'{"badRequest": {"code": 400, "message": "Invalid  hw_vif_model\\n value"}}',
     "Invalid hw_vif_model value"),
    (b'{"itemNotFound": {"code": 404, "message": "Flavor 7 could not be found."}}',
     "Flavor 7 could not be found."),
    (b'{"errors": [{"title": "Not Found", "detail": "no such thing"}]}', "no such thing"),
    (b"<html>Bad Gateway</html>", "<html>Bad Gateway</html>"),
    (b"", "(no detail)"),
    (b"{}", "(no detail)"),
])
def test_error_message(body: bytes, message: str) -> None:
    assert error_message(body) == message


# -- the commands refuse bad input in one line, before any request ---------------------
@pytest.fixture
def moorage(capsys: pytest.CaptureFixture[str]) -> Moorage:
    def run(*argv: str) -> tuple[int, str, str]:
        found = run_moorage(capsys, [*argv, "--os-compute-url", NOWHERE])
        return found.code, found.out, found.err

    return run


@pytest.mark.parametrize(("argv", "message"), [
    (["flavor", "create", "f", "--property", "trait:X"],
     "--property expects KEY=VALUE, got 'trait:X'"),
    (["flavor", "set", "f"], "nothing to set: give --property KEY=VALUE"),
    (["flavor", "unset", "f"], "nothing to unset: give --property KEY"),
    (["flavor", "unset", "f", "--property", "a=b"],
     "--property expects a KEY alone here, got 'a=b'"),
    (["image", "create", "i", "--property", "hw_vif_model"],
     "--property expects KEY=VALUE, got 'hw_vif_model'"),
    (["image", "set", "i"], "nothing to set: give --name, --disk-format, "
     "--container-format, --min-disk, --min-ram, --visibility or --property"),
    (["server", "create", "s", "--flavor", "f", "--image", "i", "--boot-from-volume", "0"],
     "--boot-from-volume expects a size in GB of at least 1, got 0"),
    (["host", "set", "h1"], "nothing to set: give --disable [--reason TEXT], --enable, "
     "--force-down or --unforce-down"),
    (["host", "set", "h1", "--reason", "why"], "--reason goes with --disable"),
    (["aggregate", "set", "a"], "nothing to set: give --name, --zone or --property KEY=VALUE"),
    (["aggregate", "create", "a", "--property", "x"], "--property expects KEY=VALUE, got 'x'"),
])
def test_bad_input_is_one_line(moorage: Moorage, argv: list[str], message: str) -> None:
    code, out, err = moorage(*argv)
    assert (code, out, err) == (1, "", message + "\n")


@pytest.mark.parametrize("argv", [
    ["host", "set", "h1", "--disable", "--enable"],
    ["host", "set", "h1", "--force-down", "--unforce-down"],
    ["server", "create", "s", "--image", "i"],           # --flavor is required
    ["server", "rebuild", "s"],                          # --image is required
    ["server", "resize", "s"],                           # --flavor is required
    ["server", "migration", "list", "--type", "teleport"],
])
def test_usage_errors(moorage: Moorage, argv: list[str]) -> None:
    code, _, err = moorage(*argv)
    assert code == 2
    assert "error:" in err and "Traceback" not in err


def test_unreachable_api_is_one_line(moorage: Moorage) -> None:
    code, out, err = moorage("flavor", "list")
    assert (code, out) == (1, "")
    assert err == f"compute API at {NOWHERE} is not reachable: connection refused\n"
