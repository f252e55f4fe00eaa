"""What counting a request for /metrics costs placement, in process.

Times N calls of the placement WSGI application (no server, no socket) with the
request metrics on and with ``observe`` replaced by a no-op, on a small cloud in a
temporary SQLite database, and N bare ``HttpMetrics.observe`` calls; with
``--multiprocess`` the values are kept as granian workers keep them (mmapped files in
a shared directory). Prints a Markdown table.

    PYTHONPATH=src .venv/bin/python bench/metrics_overhead.py [--calls N] [--multiprocess]
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any


def _environ(path: str) -> dict[str, Any]:
    return {"REQUEST_METHOD": "GET", "PATH_INFO": path, "QUERY_STRING": "",
            "HTTP_X_AUTH_TOKEN": "admin", "HTTP_OPENSTACK_API_VERSION": "placement 1.39",
            "wsgi.input": io.BytesIO(b""), "wsgi.url_scheme": "http",
            "SERVER_NAME": "localhost", "SERVER_PORT": "80"}


def _serve(app: Callable[..., object], environ: dict[str, Any],
           start_response: Callable[..., None]) -> object:
    return app(dict(environ), start_response)


def _per_call(call: Callable[[], object], calls: int, rounds: int = 5) -> float:
    """The best of ``rounds`` mean times of ``calls`` calls, in microseconds."""
    means = []
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(calls):
            call()
        means.append((time.perf_counter() - started) / calls * 1e6)
    return min(means)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--multiprocess", action="store_true",
                        help="keep the values in a shared directory, as granian workers do")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="moorage-metrics-bench-"))
    if args.multiprocess:
        (workdir / "prom").mkdir()
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(workdir / "prom")

    from moorage.conf import load_config
    from moorage.metrics import HttpMetrics
    from moorage.placement.app import make_app
    from moorage.placement.service import PlacementService

    conf = load_config([], [("api", "auth_strategy", "noauth2"),
                            ("placement_database", "connection",
                             f"sqlite:///{workdir / 'placement.sqlite'}"),
                            ("placement_database", "sync_on_startup", True)])
    service = PlacementService(conf)
    service.prepare()
    provider = str(uuid.uuid4())
    app = make_app(service)
    created: list[str] = []
    body = f'{{"name": "bench", "uuid": "{provider}"}}'.encode()
    _serve(app, {**_environ("/resource_providers"), "REQUEST_METHOD": "POST",
                 "CONTENT_TYPE": "application/json", "CONTENT_LENGTH": str(len(body)),
                 "wsgi.input": io.BytesIO(body)}, lambda status, headers: created.append(status))
    assert created == ["200 OK"], created

    def start_response(status: str, headers: list[tuple[str, str]]) -> None:
        pass

    rows = []
    for label, path in (("GET /", "/"), ("GET /resource_providers/{uuid}",
                                          f"/resource_providers/{provider}"),
                        ("GET /nothing (404, unmatched)", "/nothing")):
        environ = _environ(path)
        on = make_app(service)
        service.metrics.observe = lambda *a: None  # type: ignore[method-assign]
        off = make_app(service)
        del service.metrics.observe
        timings_on: list[float] = []
        timings_off: list[float] = []
        for _ in range(3):  # interleaved, so drift hits both alike
            for app, timings in ((off, timings_off), (on, timings_on)):
                timings.append(_per_call(partial(_serve, app, environ, start_response),
                                         args.calls // 5))
        rows.append((label, min(timings_off), min(timings_on)))
    metrics = HttpMetrics()
    bare = _per_call(lambda: metrics.observe("/resource_providers/{uuid}", "GET", 200, 0.001),
                     args.calls)
    mode = "multiprocess (mmapped files)" if args.multiprocess else "one process"
    print(f"values kept: {mode}; Python {sys.version.split()[0]}; best of 5 x "
          f"{args.calls // 5} calls, 3 interleaved rounds\n")
    print("| request | without metrics | with metrics | cost |")
    print("|---|---:|---:|---:|")
    for label, off_us, on_us in rows:
        print(f"| {label} | {off_us:.1f} us | {on_us:.1f} us | {on_us - off_us:+.1f} us |")
    print(f"| `HttpMetrics.observe` alone | | {bare:.2f} us | |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
