"""A configuration carried in the environment, for the worker processes of a WSGI server.

Moorage's own launchers (``moorage placement serve``...) export ``MOORAGE_CONFIG_FILES``
and ``MOORAGE_CONFIG_DIRS`` (paths joined with os.pathsep) and
``MOORAGE_CONFIG_OVERRIDES`` (a JSON list of [group, option, value]); each worker's
application factory reads them back.

A WSGI server of the operator's (uwsgi, gunicorn, mod_wsgi) imports the application
with no command line; ``deployed_config`` finds the files as upstream's services do:
``OS_PLACEMENT_CONFIG_DIR`` (placement's own: that directory's ``placement.conf``, for
the placement application), else ``OS_MOORAGE_CONFIG_DIR`` (default ``/etc/moorage``)
and ``OS_MOORAGE_CONFIG_FILES`` (``;``-separated, relative to that directory, default
``moorage.conf``), as nova's ``OS_NOVA_CONFIG_DIR`` and ``OS_NOVA_CONFIG_FILES``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence

from oslo_config import cfg

from moorage.conf import load_config

CONFIG_FILES_ENV = "MOORAGE_CONFIG_FILES"
CONFIG_DIRS_ENV = "MOORAGE_CONFIG_DIRS"
CONFIG_OVERRIDES_ENV = "MOORAGE_CONFIG_OVERRIDES"

# Where an application a WSGI server imported finds its files (upstream's variables).
PLACEMENT_CONFIG_DIR_ENV = "OS_PLACEMENT_CONFIG_DIR"
PLACEMENT_CONFIG_FILE = "placement.conf"
DEPLOYED_CONFIG_DIR_ENV = "OS_MOORAGE_CONFIG_DIR"
DEPLOYED_CONFIG_FILES_ENV = "OS_MOORAGE_CONFIG_FILES"
DEFAULT_CONFIG_DIR = "/etc/moorage"
DEFAULT_CONFIG_FILE = "moorage.conf"


def export_config(config_files: Sequence[str],
                  overrides: Iterable[tuple[str, str, object]],
                  config_dirs: Sequence[str] = ()) -> None:
    """Put a configuration in the environment for the worker processes."""
    os.environ[CONFIG_FILES_ENV] = os.pathsep.join(config_files)
    os.environ[CONFIG_DIRS_ENV] = os.pathsep.join(config_dirs)
    os.environ[CONFIG_OVERRIDES_ENV] = json.dumps([list(o) for o in overrides])


def exported() -> tuple[list[str], list[tuple[str, str, object]]]:
    """The configuration files and overrides ``export_config`` put in the environment."""
    files = [f for f in os.environ.get(CONFIG_FILES_ENV, "").split(os.pathsep) if f]
    overrides = [(str(g), str(o), v) for g, o, v
                 in json.loads(os.environ.get(CONFIG_OVERRIDES_ENV, "[]"))]
    return files, overrides


def exported_dirs() -> list[str]:
    """The configuration directories ``export_config`` put in the environment."""
    return [d for d in os.environ.get(CONFIG_DIRS_ENV, "").split(os.pathsep) if d]


def config_from_environment() -> cfg.ConfigOpts:
    """The configuration ``export_config`` put in the environment."""
    files, overrides = exported()
    return load_config(files, overrides, exported_dirs())


def deployed_files(environ: Mapping[str, str], *, placement: bool) -> list[str]:
    """The configuration files of an application a WSGI server imported, by upstream's
    variables (see the module's text); ``placement``: the placement application, which
    reads ``OS_PLACEMENT_CONFIG_DIR`` first."""
    placement_dir = environ.get(PLACEMENT_CONFIG_DIR_ENV, "").strip() if placement else ""
    if placement_dir:
        return [os.path.join(placement_dir, PLACEMENT_CONFIG_FILE)]
    directory = environ.get(DEPLOYED_CONFIG_DIR_ENV, "").strip() or DEFAULT_CONFIG_DIR
    names = [name.strip() for name in environ.get(DEPLOYED_CONFIG_FILES_ENV, "").split(";")
             if name.strip()] or [DEFAULT_CONFIG_FILE]
    return [os.path.join(directory, name) for name in names]


def deployed_config(*, placement: bool) -> cfg.ConfigOpts:
    """The configuration of an application a WSGI server imported: the files upstream's
    variables name (``deployed_files``); with none of them set, what
    ``MOORAGE_CONFIG_FILES`` says (``export_config``'s form), else the default file.
    A missing file is a ValueError naming it and the variables that choose it."""
    variables = ([PLACEMENT_CONFIG_DIR_ENV] if placement else []) + [
        DEPLOYED_CONFIG_DIR_ENV, DEPLOYED_CONFIG_FILES_ENV]
    if not any(os.environ.get(name, "").strip() for name in variables) \
            and CONFIG_FILES_ENV in os.environ:
        return config_from_environment()
    files = deployed_files(os.environ, placement=placement)
    missing = [path for path in files if not os.path.isfile(path)]
    if missing:
        raise ValueError(f"configuration file not found: {', '.join(missing)} "
                         f"(chosen by {', '.join(variables)})")
    return load_config(files)
