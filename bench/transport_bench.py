"""The client side of one small request: CPU and wall time per request of each HTTP
client stack against a local placement server (SQLite, ``GET /``, a few hundred
bytes, and ``GET /resource_classes``, a few kilobytes), one thread, kept-alive connections.

It measures what ``moorage.transport`` replaced: urllib3's connection pool (the
placement and compute API clients' transport until 2026-11-25) and the standard
library's http.client (under ``transport.Server`` until 2026-11-28), against
``transport.Server``'s own reading and writing of HTTP/1.1. The server's own time is
the same for all three; the CPU column is this process's alone
(``time.process_time``).

    .venv/bin/python bench/transport_bench.py [--requests 3000]
"""

from __future__ import annotations

import argparse
import http.client
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import urllib3

from moorage import transport
from moorage.placement.launcher import PlacementProcess

HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement 1.39",
           "accept": "application/json"}
PATHS = ("/", "/resource_classes")


def measure(call: Callable[[str], bytes], path: str, requests: int) -> tuple[float, float]:
    """(CPU µs, wall µs) per request of ``call(path)``, after a warm-up."""
    for _ in range(200):
        call(path)
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(requests):
        call(path)
    return ((time.process_time() - cpu) / requests * 1e6,
            (time.perf_counter() - wall) / requests * 1e6)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=3000, help="timed requests per row")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir, PlacementProcess(
            Path(workdir), database_url=None) as server:
        parts = urlsplit(server.url)
        pool = urllib3.connectionpool.connection_from_url(server.url, maxsize=1, retries=False)
        moorage_server = transport.Server(server.url, timeout=30, maxsize=1)
        plain = [http.client.HTTPConnection(parts.hostname or "", parts.port)]

        def with_urllib3(path: str) -> bytes:
            return bytes(pool.urlopen("GET", path, headers=HEADERS, retries=False).data)

        def with_transport(path: str) -> bytes:
            return moorage_server.request("GET", path, headers=HEADERS).data

        def with_http_client(path: str) -> bytes:
            plain[0].request("GET", path, headers=HEADERS)
            return plain[0].getresponse().read()

        stacks = (("urllib3 connection pool", with_urllib3),
                  ("moorage.transport.Server", with_transport),
                  ("http.client alone", with_http_client))
        print("| client | request | CPU µs per request | wall µs per request |")
        print("|---|---|---:|---:|")
        for path in PATHS:
            for label, call in stacks:
                # A fresh connection per row: the server closes idle ones.
                plain[0] = http.client.HTTPConnection(parts.hostname or "", parts.port)
                cpu, wall = measure(call, path, args.requests)
                print(f"| {label} | GET {path} | {cpu:.0f} | {wall:.0f} |")


if __name__ == "__main__":
    main()
