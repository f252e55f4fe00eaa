"""``moorage compute fleet FLEET.yaml``: many simulated hosts in one process."""

from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path

from cliff.command import Command

from moorage import service_auth, supervision
from moorage.cli.config_files import add_config_arguments
from moorage.cli.listen import claim_port
from moorage.cli.service_logging import start_logging
from moorage.compute.service import AGENT_WRITES
from moorage.conf import load_config
from moorage.conf.environment import export_config
from moorage.conf.placement import DEVELOPMENT_URL as PLACEMENT_URL
from moorage.internal_access import InternalAccess
from moorage.run.description import load_fleet
from moorage.run.fleet_hosts import fleet_hosts
from moorage.run.fleet_wsgi import FLEET_FILE_ENV, SYNC_THREADS_ENV

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
        add_config_arguments(parser, dirs=False,
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

    def take_action(self, parsed_args: argparse.Namespace) -> int:
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
        start_logging(self, conf)
        # Refused whole, naming the line and the group, before anything starts.
        description = load_fleet(Path(parsed_args.fleet))
        fleet_hosts(description.name, description.host_groups,
                    config_files=parsed_args.config_file, overrides=overrides)
        opts = conf.compute_agent
        with claim_port(opts.listen, opts.port):
            warning = InternalAccess.of(conf).start_warning(f"fleet {description.name}",
                                                            AGENT_WRITES)
            if warning is not None:
                LOG.warning("%s", warning)
            self.app.stdout.write(
                f"fleet {description.name}: {sum(g.count for g in description.host_groups):,} "
                f"hosts in {len(description.host_groups)} groups, registering with placement "
                f"at {service_auth.destination(conf, 'placement', development_url=PLACEMENT_URL)}"
                ", then serving "
                f"http://{opts.listen}:{opts.port}\n")
            self.app.stdout.flush()
            export_config(parsed_args.config_file, overrides)
            os.environ[FLEET_FILE_ENV] = str(Path(parsed_args.fleet).resolve())
            os.environ[SYNC_THREADS_ENV] = str(parsed_args.sync_threads)
            # One worker: the fleet's hosts live in it. Registering thousands of hosts
            # takes a minute before it serves (and says READY=1).
            supervision.serve("moorage.run.fleet_wsgi:create_app", host=opts.listen,
                              port=opts.port, workers=1, threads=16,
                              stop_timeout=conf.graceful_shutdown_timeout)
        return 0


COMMANDS: dict[str, type[Command]] = {"compute fleet": FleetRun}
