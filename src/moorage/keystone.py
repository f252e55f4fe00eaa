"""keystonemiddleware, for ``[api] auth_strategy = keystone`` (the default).

It is an optional dependency (``pip install 'moorage[keystone]'``). A service whose
strategy needs it checks that it is installed before it listens (``require``), so a
missing package is one line and a non-zero exit at start, not a worker that dies on
its first import while the master says it is serving.
"""

from __future__ import annotations

import importlib.util

from oslo_config import cfg

MISSING = ("[api] auth_strategy = keystone needs keystonemiddleware (pip install "
           "'moorage[keystone]') and a [keystone_authtoken] section; for development "
           "only, use auth_strategy = noauth2")


def require(conf: cfg.ConfigOpts) -> None:
    """ValueError (one line) when the configured strategy needs keystonemiddleware and
    it is not installed."""
    if conf.api.auth_strategy == "keystone" and importlib.util.find_spec(
            "keystonemiddleware") is None:
        raise ValueError(MISSING)
