"""``moorage placement ...``: run the placement service and look inside it."""

from __future__ import annotations

import argparse
import logging

from cliff.command import Command

from moorage import keystone, supervision
from moorage.cli import candidates, db_sync, demo, provider
from moorage.cli.config_files import configuration, export
from moorage.cli.listen import claim_port
from moorage.cli.service_logging import start_logging
from moorage.conf import check_all_options
from moorage.db.engine import redacted
from moorage.metrics import multiprocess_directory
from moorage.placement.service import database_url, open_database
from moorage.placement.storage import migration

LOG = logging.getLogger(__name__)


def _config_overrides(args: argparse.Namespace) -> list[tuple[str, str, object]]:
    overrides: list[tuple[str, str, object]] = []
    if getattr(args, "db", None):
        overrides.append(("placement_database", "connection", args.db))
    if getattr(args, "host", None):
        overrides.append(("placement_server", "host", args.host))
    if getattr(args, "port", None) is not None:
        overrides.append(("placement_server", "port", args.port))
    if getattr(args, "workers", None) is not None:
        overrides.append(("placement_server", "workers", args.workers))
    if getattr(args, "auth_strategy", None):
        overrides.append(("api", "auth_strategy", args.auth_strategy))
    return overrides


DATABASE = db_sync.ServiceDatabase("placement database", "placement_database", database_url,
                                   open_database, migration.current_revision,
                                   migration.upgrade)


class Serve(Command):
    """Run the placement API service (HTTP)."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        DATABASE.add_arguments(parser)
        parser.add_argument("--host", help="address to listen on (default 127.0.0.1)")
        parser.add_argument("--port", type=int, help="TCP port (default 8778)")
        parser.add_argument("--workers", type=int, help="server processes (default 1)")
        parser.add_argument("--auth-strategy", choices=["keystone", "noauth2"],
                            help="override [api] auth_strategy; noauth2 is for development")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> int:

        overrides = _config_overrides(parsed_args)
        conf = configuration(parsed_args, overrides)
        check_all_options(conf)  # a bad value is one line now, not a 500 later
        start_logging(self, conf)
        server = conf.placement_server
        # The workers count in one directory, so that /metrics sums them all.
        with claim_port(server.host, server.port), multiprocess_directory("placement"):
            if conf.placement_database.sync_on_startup:
                DATABASE.migrate(conf)
            keystone.require(conf)  # before listening: one line, not a dead worker
            if conf.api.auth_strategy == "noauth2":
                LOG.warning("auth_strategy = noauth2: DEVELOPMENT MODE, tokens are not checked")
            self.app.stdout.write(
                f"placement: serving {redacted(database_url(conf))} on "
                f"http://{server.host}:{server.port} (auth: {conf.api.auth_strategy})\n"
            )
            self.app.stdout.flush()
            export(parsed_args, overrides)
            supervision.serve("moorage.placement.wsgi:create_app", host=server.host,
                              port=server.port, workers=server.workers,
                              threads=server.threads,
                              stop_timeout=conf.graceful_shutdown_timeout)
        return 0


class DbSync(db_sync.DbSync):
    """Create or upgrade the placement database schema."""

    database = DATABASE


COMMANDS: dict[str, type[Command]] = {
    "placement serve": Serve,
    "placement db sync": DbSync,
    "placement provider list": provider.ProviderList,
    "placement provider show": provider.ProviderShow,
    "placement provider tree": provider.ProviderTree,
    "placement candidates": candidates.CandidateList,
    "placement demo": demo.Demo,
}
