"""``moorage api ...``: run the compute API service and manage its database."""

from __future__ import annotations

import argparse
import logging
from typing import Any

import sqlalchemy as sa
from cliff.command import Command
from oslo_config import cfg

from moorage.api.service import attach_workers, make_state, serve
from moorage.api.storage import migration
from moorage.api.storage.database import database_url, open_database
from moorage.conf import load_config

LOG = logging.getLogger(__name__)


def _add_config_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config-file", action="append", default=[], metavar="PATH",
                        help="INI configuration file (repeatable; later files win)")
    parser.add_argument("--db", metavar="URL",
                        help="database URL, overriding [database] connection "
                        "(default: SQLite in the user's data directory)")


def _overrides(args: argparse.Namespace) -> list[tuple[str, str, object]]:
    overrides: list[tuple[str, str, object]] = []
    if getattr(args, "db", None):
        overrides.append(("database", "connection", args.db))
    if getattr(args, "host", None):
        overrides.append(("DEFAULT", "osapi_compute_listen", args.host))
    if getattr(args, "port", None) is not None:
        overrides.append(("DEFAULT", "osapi_compute_listen_port", args.port))
    if getattr(args, "auth_strategy", None):
        overrides.append(("api", "auth_strategy", args.auth_strategy))
    return overrides


def _redacted(url: str) -> str:
    return sa.engine.make_url(url).render_as_string(hide_password=True)


def _migrate(conf: cfg.ConfigOpts) -> tuple[str | None, str | None]:
    """Bring the database to the newest schema: (revision before, revision after)."""
    url = database_url(conf)
    try:
        db = open_database(conf)
        try:
            before = migration.current_revision(db)
            migration.upgrade(db)
            return before, migration.current_revision(db)
        finally:
            db.dispose()
    except sa.exc.DBAPIError as exc:
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
        raise RuntimeError(
            f"cannot use the compute API database {_redacted(url)}: {reason}") from None


class Serve(Command):
    """Run the compute API service (HTTP) with its conductor."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        _add_config_args(parser)
        parser.add_argument("--host", help="address to listen on "
                            "([DEFAULT] osapi_compute_listen, default 127.0.0.1)")
        parser.add_argument("--port", type=int, help="TCP port "
                            "([DEFAULT] osapi_compute_listen_port, default 8774)")
        parser.add_argument("--auth-strategy", choices=["keystone", "noauth2"],
                            help="override [api] auth_strategy; noauth2 is for development")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> Any:
        conf = load_config(parsed_args.config_file, _overrides(parsed_args))
        if conf.database.sync_on_startup:
            _migrate(conf)
        state = make_state(conf, migrate=False)
        if conf.api.auth_strategy == "noauth2":
            LOG.warning("auth_strategy = noauth2: DEVELOPMENT MODE, tokens are not checked")
        try:
            server = serve(state, conf.osapi_compute_listen, conf.osapi_compute_listen_port)
        except OSError as exc:
            raise RuntimeError(f"cannot listen on {conf.osapi_compute_listen}:"
                               f"{conf.osapi_compute_listen_port}: {exc.strerror}") from None
        conductor = attach_workers(state)
        self.app.stdout.write(
            f"compute api: serving {_redacted(database_url(conf))} on {server.url} "
            f"(auth: {conf.api.auth_strategy}; placement: {state.placement.url})\n")
        self.app.stdout.flush()
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            if conductor is not None:
                conductor.stop()
        return 0


class DbSync(Command):
    """Create or upgrade the compute API database schema."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        _add_config_args(parser)
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> Any:
        conf = load_config(parsed_args.config_file, _overrides(parsed_args))
        before, after = _migrate(conf)
        self.app.stdout.write(f"compute API database {_redacted(database_url(conf))}: "
                              f"{before or 'empty'} -> {after}\n")
        return 0


COMMANDS: dict[str, type[Command]] = {
    "api serve": Serve,
    "api db sync": DbSync,
}
