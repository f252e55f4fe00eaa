"""The compute API's POST /servers, timed: what the quota check adds to a create.

Usage: PYTHONPATH=<worktree>/src python bench/create_path.py [--servers N] [--quota MODE]
       [--database URL] [--admission [--batch K]]

One compute API in this process (threaded HTTP server, no conductor: ``[conductor]
run_in_api = false``, so a create is the request's validation and its one write
transaction), a flavor and an image; N creates one after another by one project, over
one keep-alive connection. Prints the median and 90th percentile latency of the first
and the last tenth (the project's live servers grow to N: the count reads them all).

MODE: ``none`` (the noop driver: no quota work), ``unlimited`` (instances, cores and
ram -1: the limits read only), ``limited`` (limits far above N: lock, limits read and
the count of the project's servers with their cores and RAM). Older code without the
[quota] group: pass ``--quota absent``.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import statistics
import tempfile
import time
import uuid as uuidlib
from pathlib import Path

import requests

from moorage.api.service import make_state, serve
from moorage.api.state import ApiState
from moorage.conf import load_config
from moorage.lifecycle.listing import ServerQuery
from moorage.placement.client import PlacementClient

_MODES: dict[str, list[tuple[str, str, object]]] = {
    "absent": [],
    "none": [("quota", "driver", "nova.quota.NoopQuotaDriver")],
    "unlimited": [("quota", name, -1) for name in ("instances", "cores", "ram")],
    "limited": [("quota", name, 10**8) for name in ("instances", "cores", "ram")],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=2000)
    parser.add_argument("--quota", choices=sorted(_MODES), default="limited")
    parser.add_argument("--database", default=None)
    parser.add_argument("--admission", action="store_true",
                        help="then time the quota's admission alone (lock, limits, count "
                        "of the N servers), 200 times in write transactions")
    parser.add_argument("--batch", type=int, default=1,
                        help="with --admission: that many creates (the admission, then "
                        "the server's insert) in each write transaction, as a group "
                        "commit runs them; the time is per create")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = args.database or f"sqlite:///{Path(tmp) / 'api.sqlite'}"
        conf = load_config([], [("api", "auth_strategy", "noauth2"),
                                ("database", "connection", url),
                                ("conductor", "run_in_api", False),
                                # no fsync per commit: the disk's noise hid the rest
                                ("database", "sqlite_synchronous", False),
                                *_MODES[args.quota]])
        # Nothing on the create path asks placement.
        state = make_state(conf, placement=PlacementClient("http://127.0.0.1:9", "admin"),
                           migrate=True)
        server = serve(state, "127.0.0.1", 0).start()
        try:
            latencies = _creates(server.url, args.servers)
            if args.admission:
                _time_admission(state, args.batch)
        finally:
            server.stop()
            state.database.dispose()
    tenth = max(len(latencies) // 10, 1)
    for label, part in (("first", latencies[:tenth]), ("last", latencies[-tenth:])):
        ordered = sorted(part)
        print(f"{args.quota:9} {label:5} tenth: median {statistics.median(ordered):.2f} ms, "
              f"p90 {ordered[int(len(ordered) * 0.9)]:.2f} ms")


def _time_admission(state: ApiState, batch: int) -> None:
    from moorage.api.quotas import admission  # the new code only
    from moorage.lifecycle import store
    with state.database.reader() as conn:
        (record,) = store.list_servers(conn, ServerQuery(limit=1))
    times = []
    made = itertools.count()
    for _ in range(200):
        with state.database.writer() as writer:
            began = time.perf_counter()
            for _ in range(batch):
                admission.admit_servers(writer.conn, state.conf, record, 1, 1)
                if batch > 1:  # what the next admission in the transaction counts
                    store.insert_server(writer.conn, dataclasses.replace(
                        record, uuid=str(uuidlib.uuid4()), name=f"b{next(made)}"))
            times.append((time.perf_counter() - began) * 1000 / batch)
    print(f"admission alone ({batch} per transaction{', with the inserts' if batch > 1 else ''}"
          f"): median {statistics.median(times):.3f} ms, min {min(times):.3f} ms per create")


def _creates(url: str, count: int) -> list[float]:
    http = requests.Session()
    admin = {"X-Auth-Token": "admin", "OpenStack-API-Version": "compute 2.37"}
    flavor = http.post(f"{url}/v2.1/flavors", headers=admin, json={"flavor": {
        "name": "f", "vcpus": 1, "ram": 512, "disk": 1}}).json()["flavor"]["id"]
    image = http.post(f"{url}/v2.1/images", headers=admin, json={
        "name": "i", "disk_format": "raw", "container_format": "bare"}).json()["id"]
    user = {"X-Auth-Token": "alice:bench", "OpenStack-API-Version": "compute 2.37"}
    body = {"server": {"name": "vm", "flavorRef": flavor, "imageRef": image,
                       "networks": "none"}}
    latencies = []
    for _ in range(count):
        began = time.perf_counter()
        response = http.post(f"{url}/v2.1/servers", headers=user, json=body)
        latencies.append((time.perf_counter() - began) * 1000)
        assert response.status_code == 202, response.text
    return latencies


if __name__ == "__main__":
    main()
