"""``moorage compute fleet FLEET.yaml``: many simulated hosts in one process."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

from cliff.command import Command

from moorage.compute.fleet import Fleet
from moorage.conf import load_config
from moorage.placement.client import PlacementClient
from moorage.run.description import load_fleet
from moorage.run.fleet_hosts import fleet_hosts

LOG = logging.getLogger(__name__)


class FleetRun(Command):
    """Run a fleet of simulated hosts (fake, VMware, Ironic): each a compute service
    with its own providers, traits, heartbeat and guests, all served by this process
    on one port and reported to the compute API in one heartbeat."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("fleet", metavar="FLEET.yaml",
                            help="host groups, as a cloud file's host_groups "
                            "(docs/cloud-file.md): name, count, driver, capacity, traits...")
        parser.add_argument("--config-file", action="append", default=[], metavar="PATH",
                            help="INI configuration file for every host (repeatable)")
        parser.add_argument("--placement-url", metavar="URL",
                            help="override [placement] endpoint_override")
        parser.add_argument("--api-url", metavar="URL",
                            help="the compute API to register with (overrides "
                            "[compute_agent] api_url)")
        parser.add_argument("--listen", metavar="ADDRESS",
                            help="address of the fleet's HTTP API (default: "
                            "[compute_agent] listen, 127.0.0.1)")
        parser.add_argument("--port", type=int,
                            help="TCP port of the fleet's HTTP API (default: "
                            "[compute_agent] port, 8781; 0 for any free port)")
        parser.add_argument("--sync-threads", type=int, default=8, metavar="N",
                            help="threads registering the hosts with placement (default 8)")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> Any:
        overrides: list[tuple[str, str, object]] = []
        if parsed_args.placement_url:
            overrides.append(("placement", "endpoint_override", parsed_args.placement_url))
        if parsed_args.api_url:
            overrides.append(("compute_agent", "api_url", parsed_args.api_url))
        if parsed_args.listen:
            overrides.append(("compute_agent", "listen", parsed_args.listen))
        if parsed_args.port is not None:
            overrides.append(("compute_agent", "port", parsed_args.port))
        if parsed_args.sync_threads < 1:
            raise ValueError(f"--sync-threads {parsed_args.sync_threads}: allowed: 1 or more")
        conf = load_config(parsed_args.config_file, overrides)
        description = load_fleet(Path(parsed_args.fleet))  # refused whole before anything
        hosts = fleet_hosts(description.name, description.host_groups,
                            config_files=parsed_args.config_file, overrides=overrides)
        placement = PlacementClient(conf.placement.endpoint_override, conf.placement.token)
        token = conf.service_token or None
        if token is None:
            LOG.warning("fleet %s: [DEFAULT] service_token is not set: its HTTP API is open "
                        "to anyone who can reach it (DEVELOPMENT MODE)", description.name)
        opts = conf.compute_agent
        fleet = Fleet(hosts, placement, api_url=opts.api_url or None, token=token,
                      listen=opts.listen, port=opts.port, advertise_url=opts.advertise_url,
                      report_interval=float(conf.report_interval),
                      sync_interval=float(conf.update_resources_interval),
                      sync_threads=parsed_args.sync_threads)
        stopping = threading.Event()

        def stop(signum: int, _frame: FrameType | None) -> None:
            LOG.info("signal %d: stopping the fleet", signum)
            stopping.set()

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        step = max(1, len(hosts) // 20)

        def progress(done: int, total: int) -> None:
            if done % step == 0 or done == total:
                sys.stderr.write(f"\rregistering with placement: {done:,}/{total:,} hosts")
                sys.stderr.flush()

        fleet.start(progress)
        sys.stderr.write("\n")
        registration = fleet.registration
        self.app.stdout.write(
            f"fleet {description.name}: {len(hosts):,} hosts registered with placement at "
            f"{placement.url} in {registration.seconds:.1f}s ({registration.rate:,.0f}/s"
            f"{f', {len(registration.failed)} failed' if registration.failed else ''}); "
            f"serving {fleet.url}, reporting to "
            f"{opts.api_url or 'no compute API'} every {conf.report_interval}s\n")
        self.app.stdout.flush()
        stopping.wait()
        fleet.stop()
        return 0


COMMANDS: dict[str, type[Command]] = {"compute fleet": FleetRun}
