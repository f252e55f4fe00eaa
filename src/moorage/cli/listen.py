"""Refusing, before a server starts, an address another server listens on."""

from __future__ import annotations

import socket


def check_port_free(host: str, port: int) -> None:
    """RuntimeError naming the address when another server listens on it (granian would
    share it silently). The probe sets SO_REUSEADDR, as the servers do, so connections
    of a server that just stopped (TIME_WAIT) do not count as a listener."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
            probe.listen(1)
        except OSError as exc:
            raise RuntimeError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
