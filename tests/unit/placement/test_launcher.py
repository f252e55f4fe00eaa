"""free_port: servers started side by side never get the same port, and no other
process's bind to port 0 can take the port before its server binds it."""

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
    # Where the ephemeral range leaves no room below it, the kernel picks: it may
    # offer a closed probe's port again before its server binds it.
    monkeypatch.setattr(launcher, "ephemeral_ports", lambda: None)
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
    monkeypatch.setattr(launcher, "ephemeral_ports", lambda: (1024, 65535))
    monkeypatch.setattr(launcher, "_handed_out", {41001})
    monkeypatch.setattr(launcher.socket, "socket", _ProbeOffering([41001] * 1000))
    with pytest.raises(RuntimeError, match=r"no free port on 127\.0\.0\.1"):
        launcher.free_port()


def test_ports_are_picked_where_no_bind_to_port_0_lands() -> None:
    # Servers bound to port 0 (the tests' in-process servers, in every xdist worker)
    # get ports from the ephemeral range: one of them took a port free_port had just
    # probed, and a test's placement URL reached another worker's compute API.
    ephemeral = launcher.ephemeral_ports()
    if ephemeral is None:
        pytest.fail("this test needs Linux's /proc/sys/net/ipv4/ip_local_port_range")
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        assert ephemeral[0] <= bound.getsockname()[1] <= ephemeral[1]
    ports = {launcher.free_port() for _ in range(200)}
    assert len(ports) == 200
    assert all(launcher._PICKED_FROM <= port < ephemeral[0] for port in ports), sorted(ports)


class _Picks:
    """``randrange`` answering the ports in ``picks``, in turn."""

    def __init__(self, picks: list[int]) -> None:
        self.picks = picks

    def randrange(self, start: int, stop: int) -> int:
        port = self.picks.pop(0)
        assert start <= port < stop
        return port


def test_a_picked_port_in_use_or_handed_out_is_passed_over(
        monkeypatch: pytest.MonkeyPatch) -> None:
    handed_out, spare = [p for p in range(20011, 20100) if _bindable(p)][:2]
    monkeypatch.setattr(launcher, "_handed_out", {handed_out})
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen(1)
        busy = listening.getsockname()[1]
        # The range made to hold the listener's port, to pick it first.
        monkeypatch.setattr(launcher, "ephemeral_ports", lambda: (busy + 1, 65535))
        picks = _Picks([busy, handed_out, spare])
        monkeypatch.setattr(launcher, "_random", picks)
        assert launcher.free_port() == spare
        assert picks.picks == []


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def test_without_room_below_the_ephemeral_range_the_kernel_picks(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(launcher, "ephemeral_ports", lambda: (20500, 60999))
    monkeypatch.setattr(launcher.socket, "socket", _ProbeOffering([41003]))
    assert launcher.free_port() == 41003
