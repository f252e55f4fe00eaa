"""A configuration carried in the environment, for the worker processes of a WSGI server:
``MOORAGE_CONFIG_FILES`` (paths joined with os.pathsep) and ``MOORAGE_CONFIG_OVERRIDES``
(a JSON list of [group, option, value]). The launching process exports them; each
worker's application factory reads them back."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence

from oslo_config import cfg

from moorage.conf import load_config

CONFIG_FILES_ENV = "MOORAGE_CONFIG_FILES"
CONFIG_OVERRIDES_ENV = "MOORAGE_CONFIG_OVERRIDES"


def export_config(config_files: Sequence[str],
                  overrides: Iterable[tuple[str, str, object]]) -> None:
    """Put a configuration in the environment for the worker processes."""
    os.environ[CONFIG_FILES_ENV] = os.pathsep.join(config_files)
    os.environ[CONFIG_OVERRIDES_ENV] = json.dumps([list(o) for o in overrides])


def exported() -> tuple[list[str], list[tuple[str, str, object]]]:
    """The configuration files and overrides ``export_config`` put in the environment."""
    files = [f for f in os.environ.get(CONFIG_FILES_ENV, "").split(os.pathsep) if f]
    overrides = [(str(g), str(o), v) for g, o, v
                 in json.loads(os.environ.get(CONFIG_OVERRIDES_ENV, "[]"))]
    return files, overrides


def config_from_environment() -> cfg.ConfigOpts:
    """The configuration ``export_config`` put in the environment."""
    files, overrides = exported()
    return load_config(files, overrides)
