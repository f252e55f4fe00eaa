"""keystonemiddleware, for ``[api] auth_strategy = keystone`` (the default).

It is an optional dependency (``pip install 'moorage[keystone]'``). A service whose
strategy needs it checks that it is installed before it listens (``require``), so a
missing package is one line and a non-zero exit at start, not a worker that dies on
its first import while the master says it is serving.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any
from wsgiref.types import WSGIApplication

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


def protect(app: WSGIApplication, conf: cfg.ConfigOpts,
            public: Callable[[dict[str, Any]], bool]) -> WSGIApplication:
    """keystonemiddleware's auth_token in front of ``app``, but for the paths ``public``
    lets through as they are (version documents, a public /metrics, routes that check
    a token of their own; ``public`` reads the request's environ). SystemExit (one
    line) when keystonemiddleware is missing."""
    try:
        from keystonemiddleware import auth_token
    except ImportError:
        raise SystemExit(MISSING) from None
    protected = auth_token.AuthProtocol(app, {"oslo_config_config": conf})

    def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if public(environ):
            return app(environ, start_response)
        return protected(environ, start_response)

    return application
