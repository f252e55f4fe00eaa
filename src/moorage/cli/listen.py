"""Refusing, before a server starts, an address another server listens on.

On Linux granian binds each worker's socket with SO_REUSEPORT, so a second
server started on a port that is already served does not fail: the kernel
quietly shares the connections between the two, each with its own database and
state. A probe before the start catches a server already listening; two servers
starting at the same moment would both pass it, so each also claims the address
for its lifetime (an abstract Unix socket named after it, released by the kernel
when the process ends) before probing.
"""

from __future__ import annotations

import contextlib
import socket
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def claim_port(host: str, port: int) -> Iterator[None]:
    """Hold ``host:port`` for this process's server while the block runs, or raise
    RuntimeError naming it.

    Nothing is claimed for port 0 or where granian does not share ports (not Linux).
    The probe sets SO_REUSEADDR, as the servers do, so connections of a server that
    just stopped (TIME_WAIT) do not count as a listener.
    """
    with _claim(host, port) if port and sys.platform == "linux" else contextlib.nullcontext():
        check_port_free(host, port)
        yield


def check_port_free(host: str, port: int) -> None:
    """RuntimeError naming the address when another server listens on it."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
            probe.listen(1)
        except OSError as exc:
            raise RuntimeError(f"cannot listen on {host}:{port}: {exc.strerror}") from None


def _claim(host: str, port: int) -> socket.socket:
    claim = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        # Abstract namespace (leading NUL): no file, per network namespace like the port.
        claim.bind(f"\0moorage-listen-{host}-{port}")
    except OSError:
        claim.close()
        raise RuntimeError(
            f"cannot listen on {host}:{port}: Address already in use "
            "(another Moorage server has claimed it)") from None
    return claim
