"""``moorage placement db sync`` and ``moorage api db sync``, and the migration a
service runs before it serves: one implementation, given the service's database."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

import sqlalchemy as sa
from cliff.command import Command
from oslo_config import cfg

from moorage.cli.config_files import add_config_arguments, configuration
from moorage.db.database import Database
from moorage.db.engine import redacted

D = TypeVar("D", bound=Database)


@dataclass(frozen=True)
class ServiceDatabase(Generic[D]):
    """One service's database as its commands see it: named in messages by ``title``,
    its URL in ``[option_group] connection`` (which ``--db`` overrides)."""

    title: str
    option_group: str
    url: Callable[[cfg.ConfigOpts], str]
    open: Callable[[cfg.ConfigOpts], D]
    current_revision: Callable[[D], str | None]
    upgrade: Callable[[D], None]

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """``--config-file``, ``--config-dir`` and ``--db``, which every command of the
        service takes."""
        add_config_arguments(parser)
        parser.add_argument("--db", metavar="URL",
                            help=f"database URL, overriding [{self.option_group}] connection "
                            "(default: SQLite in the user's data directory)")

    def migrate(self, conf: cfg.ConfigOpts) -> tuple[str | None, str | None]:
        """Bring the database to the newest schema: (revision before, revision after).

        A database that cannot be opened is a one-line error naming it.
        """
        url = self.url(conf)
        try:
            db = self.open(conf)
            try:
                before = self.current_revision(db)
                self.upgrade(db)
                return before, self.current_revision(db)
            finally:
                db.dispose()
        except sa.exc.DBAPIError as exc:
            reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
            raise RuntimeError(
                f"cannot use the {self.title} {redacted(url)}: {reason}") from None


class DbSync(Command):
    """Create or upgrade a service's database schema (a subclass names the service)."""

    database: ClassVar[ServiceDatabase[Any]]

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        self.database.add_arguments(parser)
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> Any:
        overrides: list[tuple[str, str, object]] = (
            [(self.database.option_group, "connection", parsed_args.db)]
            if parsed_args.db else [])
        conf = configuration(parsed_args, overrides)
        before, after = self.database.migrate(conf)
        self.app.stdout.write(f"{self.database.title} {redacted(self.database.url(conf))}: "
                              f"{before or 'empty'} -> {after}\n")
        return 0
