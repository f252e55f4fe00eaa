"""Authentication: who is calling, as ``Credentials``.

Two strategies, chosen by ``[api] auth_strategy``:

* ``noauth2`` (DEVELOPMENT ONLY), upstream's semantics: ``X-Auth-Token`` is
  ``user[:project]`` and is trusted as is; the token ``admin`` has the admin role
  unless ``X-Roles`` says otherwise; ``OpenStack-System-Scope`` makes the
  request system scoped (no project).
* ``keystone``: keystonemiddleware validates the token in front of the
  application and sets the identity headers, which are read the same way.

The seam is ``credentials_from_headers``: any authenticating middleware that
sets ``X-User-Id``, ``X-Project-Id``, ``X-Roles`` and ``OpenStack-System-Scope``
can stand in front of placement.
"""

from __future__ import annotations

from collections.abc import Callable
from wsgiref.types import WSGIApplication

from oslo_config import cfg

from moorage import keystone
from moorage.placement.http import Credentials, Request, Unauthorized

NOAUTH2 = "noauth2"
KEYSTONE = "keystone"

# Paths anyone may read: the version document (and /metrics under [api] public_metrics).
_PUBLIC_PATHS = ("/", "")
METRICS_PATH = "/metrics"


def public_paths(conf: cfg.ConfigOpts) -> tuple[str, ...]:
    return (*_PUBLIC_PATHS, METRICS_PATH) if conf.api.public_metrics else _PUBLIC_PATHS


def _split(value: str | None) -> tuple[str, ...]:
    return tuple(r.strip() for r in value.split(",") if r.strip()) if value else ()


def credentials_from_headers(req: Request) -> Credentials:
    """Credentials from the identity headers an authenticating middleware set."""
    system_scope = req.header("OpenStack-System-Scope") or None
    project = req.header("X-Project-Id") or req.header("X-Tenant-Id")
    return Credentials(
        user_id=req.header("X-User-Id") or req.header("X-User"),
        project_id=None if system_scope else project,
        roles=_split(req.header("X-Roles")),
        system_scope=system_scope,
    )


def noauth2_credentials(req: Request) -> Credentials:
    """Upstream's noauth2: trust the token. 401 without one."""
    token = req.header("X-Auth-Token")
    if token is None:
        raise Unauthorized("")
    user_id, _, project_id = token.partition(":")
    project_id = project_id or user_id
    roles_header = req.header("X-Roles")
    if roles_header is not None:
        roles = _split(roles_header)
    elif user_id == "admin":
        roles = ("admin",)
    else:
        roles = ()
    system_scope = req.header("OpenStack-System-Scope") or None
    explicit_project = req.header("X-Project-Id")
    return Credentials(
        user_id=user_id,
        project_id=None if system_scope else (explicit_project or project_id),
        roles=roles,
        system_scope=system_scope,
    )


def keystone_credentials(req: Request) -> Credentials:
    credentials = credentials_from_headers(req)
    if credentials.user_id is None:
        raise Unauthorized("")
    return credentials


def authenticator(conf: cfg.ConfigOpts) -> Callable[[Request], Credentials]:
    """The function that turns a request into credentials for this configuration."""
    strategy = conf.api.auth_strategy
    inner = noauth2_credentials if strategy == NOAUTH2 else keystone_credentials
    public = public_paths(conf)

    def authenticate(req: Request) -> Credentials:
        if req.path in public:
            return Credentials(None, None, ())
        return inner(req)

    return authenticate


def wrap_keystone(app: WSGIApplication, conf: cfg.ConfigOpts) -> WSGIApplication:
    """Put keystonemiddleware's auth_token in front of ``app`` (keystone strategy), but
    for the public paths."""
    public = public_paths(conf)
    return keystone.protect(app, conf, lambda environ: environ.get("PATH_INFO", "") in public)
