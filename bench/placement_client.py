"""What authentication costs a placement request on the client side: CPU and wall time per
``PlacementClient.request("GET", "/resource_classes")`` against a local placement server
(SQLite, noauth2), one thread, kept-alive connections, by the client's credentials:

- ``transport``: ``moorage.transport.Server`` alone with fixed headers, the floor;
- ``development token``: the fixed ``[placement] token`` (``DevelopmentToken``);
- ``keystoneauth1``: ``KeystoneCredentials`` over a keystoneauth1 plugin whose token is
  held (the steady state between two renewals of a password token: the headers are
  the dict kept until the renewal time).

The server's time is the same for every row; the CPU column is this process's alone.
Run it with ``PYTHONPATH`` at another checkout to compare commits (a checkout without
``moorage.service_auth`` measures the first two rows).

    .venv/bin/python bench/placement_client.py [--requests 3000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from moorage import transport
from moorage.placement.client import PlacementClient
from moorage.placement.launcher import PlacementProcess

PATH = "/resource_classes"
HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement 1.39",
           "accept": "application/json"}


def measure(call: Callable[[], object], requests: int) -> tuple[float, float]:
    """(CPU µs, wall µs) per call, after a warm-up."""
    for _ in range(200):
        call()
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(requests):
        call()
    return ((time.process_time() - cpu) / requests * 1e6,
            (time.perf_counter() - wall) / requests * 1e6)


def keystone_client(url: str) -> PlacementClient | None:
    """A client with keystoneauth1 credentials whose token is held; None on a checkout
    that predates them."""
    try:
        from keystoneauth1 import session, token_endpoint

        from moorage.service_auth import KeystoneCredentials, KeystoneToken
    except ImportError:
        return None
    from keystoneauth1 import adapter

    auth = token_endpoint.Token(url, "admin")
    ks_session = session.Session(auth=auth)
    credentials = KeystoneCredentials(
        KeystoneToken("[placement]", auth, ks_session),
        adapter.Adapter(ks_session, auth=auth), tls=None, timeout=None)
    return PlacementClient(credentials=credentials, concurrency=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=3000, help="timed requests per row")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds, rows interleaved; the table gives the medians")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir, PlacementProcess(
            Path(workdir), database_url=None) as server:
        floor = transport.Server(server.url, timeout=30, maxsize=1)
        rows: dict[str, Callable[[], object]] = {
            "transport": lambda: floor.request("GET", PATH, headers=HEADERS),
        }
        development = PlacementClient(server.url, "admin", concurrency=1)
        rows["development token"] = lambda: development.request("GET", PATH)
        keystone = keystone_client(server.url)
        if keystone is not None:
            rows["keystoneauth1"] = lambda: keystone.request("GET", PATH)
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in rows}
        for _ in range(args.rounds):
            for name, call in rows.items():
                results[name].append(measure(call, args.requests))
    print(f"GET {PATH}, {args.requests:,} requests x {args.rounds} rounds (medians)")
    print(f"{'client':<20} {'CPU µs/request':>15} {'wall µs/request':>16}")
    for name, measured in results.items():
        cpu = statistics.median(m[0] for m in measured)
        wall = statistics.median(m[1] for m in measured)
        print(f"{name:<20} {cpu:>15.1f} {wall:>16.1f}")
    if keystone is None:
        print("(keystoneauth1: this checkout has no moorage.service_auth)")


if __name__ == "__main__":
    main()
