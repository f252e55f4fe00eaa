"""free_port: servers started side by side never get the same port."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from moorage.placement import launcher


class _ProbeOffering:
    """A socket whose kernel offers the ports in ``offers``, in turn."""

    def __init__(self, offers: list[int]) -> None:
        self._offers = offers

    def __call__(self, *args: Any) -> _ProbeOffering:
        return self

    def __enter__(self) -> _ProbeOffering:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def bind(self, address: tuple[str, int]) -> None:
        assert address[1] == 0

    def getsockname(self) -> tuple[str, int]:
        return "127.0.0.1", self._offers.pop(0)


def test_a_port_offered_again_is_not_handed_out_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    # The kernel may offer a closed probe's port again before its server binds it.
    monkeypatch.setattr(launcher, "_handed_out", set())
    monkeypatch.setattr(launcher.socket, "socket", _ProbeOffering([41001, 41001, 41001, 41002]))
    assert launcher.free_port() == 41001
    assert launcher.free_port() == 41002


def test_free_port_is_bindable() -> None:
    port = launcher.free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


def test_a_kernel_offering_only_handed_out_ports_is_an_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(launcher, "_handed_out", {41001})
    monkeypatch.setattr(launcher.socket, "socket", _ProbeOffering([41001] * 1000))
    with pytest.raises(RuntimeError, match=r"no free port on 127\.0\.0\.1"):
        launcher.free_port()
