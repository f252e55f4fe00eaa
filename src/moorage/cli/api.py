"""``moorage api ...``: run the compute API service and manage its database;
``moorage conductor serve``: run a conductor on its own."""

from __future__ import annotations

import argparse
import logging

from cliff.command import Command
from oslo_config import cfg

from moorage import keystone, service_auth, supervision, systemd
from moorage.api.catalog import ApiCatalog
from moorage.api.service import check_prefilter_traits
from moorage.api.storage import migration
from moorage.api.storage.database import database_url, open_database
from moorage.cli import db_sync
from moorage.cli.config_files import configuration, export
from moorage.cli.listen import claim_port
from moorage.cli.service_logging import start_logging
from moorage.conf import check_all_options
from moorage.conf.placement import DEVELOPMENT_URL as PLACEMENT_URL
from moorage.db.engine import redacted
from moorage.metrics import multiprocess_directory
from moorage.placement.client import PlacementClient
from moorage.scheduler.manager import check_configuration
from moorage.stack import http_agents, make_conductor

LOG = logging.getLogger(__name__)


DATABASE = db_sync.ServiceDatabase("compute API database", "database", database_url,
                                   open_database, migration.current_revision,
                                   migration.upgrade)


def _overrides(args: argparse.Namespace) -> list[tuple[str, str, object]]:
    overrides: list[tuple[str, str, object]] = []
    if getattr(args, "db", None):
        overrides.append(("database", "connection", args.db))
    if getattr(args, "host", None):
        overrides.append(("DEFAULT", "osapi_compute_listen", args.host))
    if getattr(args, "port", None) is not None:
        overrides.append(("DEFAULT", "osapi_compute_listen_port", args.port))
    if getattr(args, "workers", None) is not None:
        overrides.append(("DEFAULT", "osapi_compute_workers", args.workers))
    if getattr(args, "auth_strategy", None):
        overrides.append(("api", "auth_strategy", args.auth_strategy))
    if getattr(args, "no_conductor", False):
        overrides.append(("conductor", "run_in_api", False))
    return overrides


def _configuration(args: argparse.Namespace) -> cfg.ConfigOpts:
    """The configuration of the files given, with the command line's overrides."""
    return configuration(args, _overrides(args))


class Serve(Command):
    """Run the compute API service (HTTP, granian workers), each worker with its
    conductor."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        DATABASE.add_arguments(parser)
        parser.add_argument("--host", help="address to listen on "
                            "([DEFAULT] osapi_compute_listen, default 127.0.0.1)")
        parser.add_argument("--port", type=int, help="TCP port "
                            "([DEFAULT] osapi_compute_listen_port, default 8774)")
        parser.add_argument("--workers", type=int, help="server processes "
                            "([DEFAULT] osapi_compute_workers, default 1)")
        parser.add_argument("--auth-strategy", choices=["keystone", "noauth2"],
                            help="override [api] auth_strategy; noauth2 is for development")
        parser.add_argument("--no-conductor", action="store_true",
                            help="record work only, for `moorage conductor serve` processes "
                            "([conductor] run_in_api = false)")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> int:
        overrides = _overrides(parsed_args)
        conf = configuration(parsed_args, overrides)
        check_all_options(conf)  # a bad value is one line now, not a 500 later
        start_logging(self, conf)
        check_configuration(conf)  # before any worker starts: one line, not a dead worker
        check_prefilter_traits(conf)  # warnings only: it never stops the start
        host, port = conf.osapi_compute_listen, conf.osapi_compute_listen_port
        # The workers count in one directory, so that /metrics sums them all.
        with claim_port(host, port), multiprocess_directory("api"):
            if conf.database.sync_on_startup:
                DATABASE.migrate(conf)
            keystone.require(conf)  # before listening: one line, not a dead worker
            if conf.api.auth_strategy == "noauth2":
                LOG.warning("auth_strategy = noauth2: DEVELOPMENT MODE, tokens are not checked")
            placement = service_auth.destination(conf, "placement",
                                                 development_url=PLACEMENT_URL)
            conductor = ("a conductor in each worker" if conf.conductor.run_in_api
                         else "no conductor: work is left to `moorage conductor serve`")
            self.app.stdout.write(
                f"compute api: serving {redacted(database_url(conf))} on http://{host}:{port} "
                f"with {conf.osapi_compute_workers} worker(s), {conductor} (auth: "
                f"{conf.api.auth_strategy}; placement: {placement})\n")
            self.app.stdout.flush()
            export(parsed_args, overrides)
            supervision.serve("moorage.stack:create_api_app", host=host, port=port,
                              workers=conf.osapi_compute_workers,
                              threads=conf.osapi_compute_threads,
                              stop_timeout=conf.graceful_shutdown_timeout)
        return 0


class ConductorServe(Command):
    """Run a conductor on its own: it carries out the server operations any compute API
    process recorded (and takes over those of conductors that died)."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        DATABASE.add_arguments(parser)
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> int:
        conf = _configuration(parsed_args)
        check_all_options(conf)
        start_logging(self, conf)
        if conf.database.sync_on_startup:
            DATABASE.migrate(conf)
        database = open_database(conf)
        placement = PlacementClient.from_conf(conf)
        token = str(conf.service_token) if conf.service_token else None
        catalog = ApiCatalog(database, float(conf.service_down_time))
        agents = http_agents(conf, catalog, token)
        conductor = make_conductor(conf, database, placement, agents, catalog)
        if token is None:  # after the configuration's checks: a bad one is the one line
            LOG.warning("conductor: [DEFAULT] service_token is unset: its spawns and deletes "
                        "carry none, and agents refuse them unless they run with [DEFAULT] "
                        "allow_anonymous_internal_writes (DEVELOPMENT ONLY)")
        stopping = systemd.stop_on_signal(f"conductor {conductor.identity}")
        conductor.start()
        self.app.stdout.write(
            f"conductor {conductor.identity}: serving {redacted(database_url(conf))} with "
            f"{conductor.workers} workers, leases of {conductor.lease_seconds:g}s "
            f"(placement: {placement.url})\n")
        self.app.stdout.flush()
        systemd.notify(systemd.READY, f"STATUS=conductor {conductor.identity} serving")
        stopping.wait()
        # The operations under way are finished; those not started are given back.
        conductor.stop()
        database.dispose()
        return 0


class DbSync(db_sync.DbSync):
    """Create or upgrade the compute API database schema."""

    database = DATABASE


COMMANDS: dict[str, type[Command]] = {
    "api serve": Serve,
    "api db sync": DbSync,
    "conductor serve": ConductorServe,
}
