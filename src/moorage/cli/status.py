"""``moorage-status upgrade check``: what an operator runs before restarting the services
on a new Moorage, as ``nova-status`` and ``placement-status`` (oslo.upgradecheck).

It reads the configuration as the services do (``--config-file``, ``--config-dir``) and
checks, without writing anything: every option's value; the Keystone credentials the
services reach placement and Glance with (a token, the endpoint); the placement and
compute API databases at the schema this Moorage needs; and, with a prefilter on, that placement's
providers report the trait families it requires (the services' start-up check).
Exit status: 0 every check passed, 1 a warning, 2 a failure, 255 the check could not
run (its one line says why).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Sequence

import sqlalchemy as sa
from oslo_config import cfg
from oslo_upgradecheck import upgradecheck

from moorage import service_auth
from moorage.api.service import check_prefilter_traits
from moorage.api.storage import database as api_database
from moorage.api.storage import migration as api_migration
from moorage.conf import InvalidOption, check_all_options, register_opts, unreadable
from moorage.db.database import Database
from moorage.db.engine import redacted, sqlite_file
from moorage.db.migration import Migrations
from moorage.placement import service as placement_service
from moorage.placement.storage import migration as placement_migration
from moorage.scheduler.bootability import configured_prefilters

Code = upgradecheck.Code
Result = upgradecheck.Result

# Exit status when the checks could not run at all (oslo.upgradecheck's).
CANNOT_RUN = 255


def _schema(title: str, url: str, open_database: Callable[[], Database],
            migrations: Migrations, sync: str) -> Result:
    """The database at ``url`` at this Moorage's newest schema: Success; an earlier (or
    unknown) one: Failure naming ``sync``; none yet: a Warning (a host that does not run
    the service has none). Read only: a SQLite file that is not there is not made."""
    shown = redacted(url)
    path = sqlite_file(url) if url.startswith("sqlite") else None
    if path is not None and not os.path.exists(path):
        return Result(Code.WARNING, f"no {title} at {shown}: where this host runs the "
                      f"service, create it with `{sync}`")
    try:
        db = open_database()
        try:
            current = migrations.current_revision(db)
        finally:
            db.dispose()
    except sa.exc.DBAPIError as exc:
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
        return Result(Code.FAILURE, f"cannot read the {title} at {shown}: {reason}")
    head = migrations.head_revision()
    if current == head:
        return Result(Code.SUCCESS, f"{shown} is at revision {head}")
    if current is None:
        return Result(Code.WARNING, f"the {title} at {shown} has no schema: where this "
                      f"host runs the service, run `{sync}`")
    return Result(Code.FAILURE, f"the {title} at {shown} is at revision {current}; this "
                  f"Moorage needs {head}: run `{sync}` (or start the service with "
                  "sync_on_startup)")


class Checks(upgradecheck.UpgradeCommands):
    """Moorage's upgrade checks, on ``conf`` (parsed by ``main`` before they run)."""

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self.conf = conf

    def _options(self) -> Result:
        try:
            check_all_options(self.conf)
        except InvalidOption as exc:
            return Result(Code.FAILURE, str(exc))
        return Result(Code.SUCCESS)

    def _placement_database(self) -> Result:
        return _schema("placement database", placement_service.database_url(self.conf),
                       lambda: placement_service.open_database(self.conf),
                       placement_migration.MIGRATIONS, "moorage placement db sync")

    def _api_database(self) -> Result:
        return _schema("compute API database", api_database.database_url(self.conf),
                       lambda: api_database.open_database(self.conf),
                       api_migration.MIGRATIONS, "moorage api db sync")

    def _prefilters(self) -> Result:
        prefilters = configured_prefilters(self.conf)
        if not prefilters:
            return Result(Code.SUCCESS, "no prefilter is on ([scheduler])")
        warnings = check_prefilter_traits(self.conf)
        if warnings:
            return Result(Code.WARNING, " ".join(warnings))
        return Result(Code.SUCCESS, f"placement's providers report the traits "
                      f"{', '.join(sorted(prefilters))} requires")

    def _credentials(self) -> Result:
        """Each of [placement] and [glance] with auth_type: a token from Keystone and
        the service's endpoint (the catalog's, or endpoint_override)."""
        found: list[str] = []
        for group in ("placement", "glance"):
            if not self.conf[group].auth_type:
                continue
            try:
                credentials = service_auth.from_conf(self.conf, group, development_url="")
                credentials.headers()
                endpoint = (str(self.conf.glance.api_servers[0]) if group == "glance"
                            and self.conf.glance.api_servers else credentials.endpoint())
            except service_auth.CredentialsError as exc:
                return Result(Code.FAILURE, str(exc))
            found.append(f"[{group}]: a token from Keystone, {group} at {endpoint}")
        if not found:
            return Result(Code.SUCCESS, "no [placement] or [glance] auth_type: the "
                          "DEVELOPMENT token or the service token is sent as it is")
        return Result(Code.SUCCESS, "; ".join(found))

    _upgrade_checks = (
        ("Option values", _options),
        ("Keystone credentials of the services", _credentials),
        ("Placement database schema", _placement_database),
        ("Compute API database schema", _api_database),
        ("Prefilters and placement's traits", _prefilters),
    )


def main(argv: Sequence[str] | None = None) -> int:
    """``moorage-status [--config-file PATH] [--config-dir DIR] upgrade check [--json]``
    (the options before the command, as nova-status takes them)."""
    # The checks' own findings are their results: no log lines beside the table.
    logging.getLogger().addHandler(logging.NullHandler())
    logging.getLogger("moorage").propagate = False
    conf = cfg.ConfigOpts()
    register_opts(conf)
    checks = Checks(conf)
    upgradecheck.register_cli_options(conf, checks)
    try:
        conf(args=list(sys.argv[1:] if argv is None else argv), project="moorage",
             prog="moorage-status",
             default_config_files=[])
    except (cfg.ConfigFilesNotFoundError, cfg.ConfigFileParseError,
            cfg.ConfigDirNotFoundError) as exc:
        print(f"moorage-status: {unreadable(exc)}", file=sys.stderr)
        return CANNOT_RUN
    # The library reads --json from its module's CONF, which its own main() sets.
    upgradecheck.CONF = conf
    return upgradecheck.run(conf)


if __name__ == "__main__":
    sys.exit(main())
