"""The request line's CPU: one ``request_context.log_request`` INFO line (a
placement candidates request, as the services write it) to a log file, through the
logging ``moorage.logs.setup`` configures (oslo.log's handlers, Moorage's filter and
formatter), and oslo.log's own ContextFormatter on the same handler for comparison.

    .venv/bin/python bench/log_line.py [--lines 20000]
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import time
from pathlib import Path

from oslo_config import cfg
from oslo_log import formatters
from oslo_log import log as oslo_log

from moorage import logs, request_context

ENVIRON = {
    "REMOTE_ADDR": "127.0.0.1", "REQUEST_METHOD": "GET",
    "PATH_INFO": "/allocation_candidates",
    "QUERY_STRING": "limit=50&resources=DISK_GB%3A1%2CMEMORY_MB%3A512%2CVCPU%3A1"
                    "&root_required=COMPUTE_IMAGE_TYPE_RAW%2C%21COMPUTE_STATUS_DISABLED"}


def per_line(logger: logging.Logger, lines: int) -> float:
    """CPU µs per request line, in a request's context."""
    context = request_context.new_context(
        global_request_id="req-2ea78e6a-95b6-4b4a-88a2-378610b9e865")
    context.user_id = context.project_id = "admin"
    with request_context.active(context):
        for _ in range(200):
            request_context.log_request(logger, ENVIRON, 200, 21927, 0.0013, " mv: 1.39")
        started = time.process_time()
        for _ in range(lines):
            request_context.log_request(logger, ENVIRON, 200, 21927, 0.0013, " mv: 1.39")
    return (time.process_time() - started) / lines * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=20000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        conf = cfg.ConfigOpts()
        oslo_log.register_options(conf)
        conf([], project="moorage")
        conf.set_override("log_file", str(Path(work) / "service.log"))
        logs.setup(conf)
        logger = logging.getLogger("moorage.placement.requests")
        handler = logging.getLogger().handlers[0]
        lean = handler.formatter
        print("| formatter | CPU µs per request line |")
        print("|---|---:|")
        print(f"| {type(lean).__name__} (moorage.logs) | {per_line(logger, args.lines):.1f} |")
        handler.setFormatter(formatters.ContextFormatter(
            project=logs.PRODUCT, version="bench", datefmt=None, config=conf))
        print(f"| ContextFormatter (oslo.log) | {per_line(logger, args.lines):.1f} |")


if __name__ == "__main__":
    main()
