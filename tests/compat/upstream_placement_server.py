"""Serve upstream OpenStack Placement (the compat venv's openstack-placement) over HTTP.

Run by the compat venv's own python, never imported by the tests' interpreter:
``python upstream_placement_server.py DATABASE_FILE [CONFIG_FILE]``. It configures
upstream's WSGI application (noauth2: the token "admin" is an administrator; the legacy
policy defaults, as upstream's gabbi APIFixture; or, with CONFIG_FILE, keystone: its
``[keystone_authtoken]`` section, and upstream's own policy defaults, as a deployment
runs it), migrates a fresh SQLite database, listens
on a free port of 127.0.0.1 and prints that port on its first line of stdout. Until
then, a failure is one line on stderr and exit status 2 (the launcher shows it).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script: tests.*
from tests.wsgi_child import die_with_parent, serve


def application(database_file: str, config_file: str | None = None) -> Any:
    from oslo_config import cfg
    from oslo_policy import opts as policy_opts
    from placement import conf as placement_conf
    from placement import db_api, deploy

    conf = cfg.ConfigOpts()
    placement_conf.register_opts(conf)
    policy_opts.set_defaults(conf)
    conf.set_override("connection", f"sqlite:///{database_file}", group="placement_database")
    conf.set_override("sync_on_startup", True, group="placement_database")
    if config_file is None:
        conf.set_override("auth_strategy", "noauth2", group="api")
        conf.set_override("enforce_new_defaults", False, group="oslo_policy")
    else:
        conf.set_override("auth_strategy", "keystone", group="api")
    conf([], project="placement",
         default_config_files=[config_file] if config_file is not None else [])
    db_api.configure(conf)
    return deploy.loadapp(conf)


def main(argv: list[str]) -> int:
    die_with_parent()
    if len(argv) not in (2, 3):
        print("usage: upstream_placement_server.py DATABASE_FILE [CONFIG_FILE]",
              file=sys.stderr)
        return 2
    try:
        app = application(argv[1], argv[2] if len(argv) == 3 else None)
    except ImportError as exc:
        print(f"upstream placement cannot be imported ({exc}): its service dependencies "
              "are missing from the compat venv", file=sys.stderr)
        return 2
    except Exception as exc:  # any start-up failure: one line for the launcher
        print(f"upstream placement did not configure: {type(exc).__name__}: {exc}",
              file=sys.stderr)
        return 2
    serve(app)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
