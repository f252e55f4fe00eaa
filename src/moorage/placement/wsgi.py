"""WSGI entry points.

``create_app`` is the factory the server workers call. Configuration comes from
the environment so that it crosses into worker processes:
``MOORAGE_CONFIG_FILES`` (paths joined with os.pathsep) and
``MOORAGE_CONFIG_OVERRIDES`` (JSON list of [group, option, value]).
Other WSGI servers (uwsgi, gunicorn) can use ``moorage.placement.wsgi:create_app``
the same way.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence

from moorage.conf import load_config
from moorage.placement.app import WSGIApp, make_app
from moorage.placement.service import PlacementService

CONFIG_FILES_ENV = "MOORAGE_CONFIG_FILES"
CONFIG_OVERRIDES_ENV = "MOORAGE_CONFIG_OVERRIDES"


def export_config(
    config_files: Sequence[str], overrides: Iterable[tuple[str, str, object]]
) -> None:
    """Put a configuration in the environment for ``create_app`` in worker processes."""
    os.environ[CONFIG_FILES_ENV] = os.pathsep.join(config_files)
    os.environ[CONFIG_OVERRIDES_ENV] = json.dumps([list(o) for o in overrides])


def create_app() -> WSGIApp:
    files = [f for f in os.environ.get(CONFIG_FILES_ENV, "").split(os.pathsep) if f]
    overrides = [tuple(o) for o in json.loads(os.environ.get(CONFIG_OVERRIDES_ENV, "[]"))]
    conf = load_config(files, overrides)
    service = PlacementService(conf)
    # Migrations ran once in the launching process; workers only load the index.
    service.prepare(migrate=False)
    return make_app(service)
