"""Authentication of compute API requests, as a ``RequestContext``.

``[api] auth_strategy`` chooses, as for placement:

* ``noauth2`` (DEVELOPMENT ONLY): ``X-Auth-Token`` is ``user[:project]`` and is
  trusted as is; the token ``admin`` is an administrator (``X-Roles`` overrides).
* ``keystone``: keystonemiddleware validates the token in front of the application
  and sets ``X-User-Id``, ``X-Project-Id`` and ``X-Roles``, which are read here.

The internal routes agents call (``/internal/...``) are not user routes: they are
checked against ``[DEFAULT] service_token`` instead, whatever the strategy
(``moorage.internal_access``: anonymous writes only under a development flag).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from wsgiref.types import WSGIApplication

from oslo_config import cfg

from moorage import keystone
from moorage.api.context import ANONYMOUS, RequestContext
from moorage.api.errors import Unauthorized
from moorage.api.http import ApiRequest
from moorage.internal_access import READS, TOKEN_HEADER, WRONG_TOKEN, InternalAccess

NOAUTH2 = "noauth2"
KEYSTONE = "keystone"
INTERNAL_PREFIX = "/internal/"
# The image service's version documents (moorage.api.image_service).
IMAGE_VERSIONS = frozenset({"/image", "/image/", "/image/versions", "/image/versions/"})
# Anyone may read these: the version documents and the OpenAPI document (and /metrics
# under [api] public_metrics).
PUBLIC_PATHS = frozenset({"", "/", "/v2.1", "/v2.1/", "/openapi.json"}) | IMAGE_VERSIONS
METRICS_PATH = "/metrics"


def _split(value: str | None) -> tuple[str, ...]:
    return tuple(r.strip() for r in value.split(",") if r.strip()) if value else ()


def noauth2_context(req: ApiRequest) -> RequestContext:
    token = req.header("X-Auth-Token")
    if not token:
        raise Unauthorized("Authentication required: send X-Auth-Token (noauth2 "
                           "development mode: 'admin', or 'user:project').")
    user_id, _, project_id = token.partition(":")
    roles_header = req.header("X-Roles")
    if roles_header is not None:
        roles = _split(roles_header)
    else:
        roles = ("admin",) if user_id == "admin" else ("member", "reader")
    return RequestContext(user_id=user_id, project_id=req.header("X-Project-Id")
                          or project_id or user_id, roles=roles)


def keystone_context(req: ApiRequest) -> RequestContext:
    user_id = req.header("X-User-Id") or req.header("X-User")
    if user_id is None:
        raise Unauthorized("Authentication required.")
    return RequestContext(user_id=user_id,
                          project_id=req.header("X-Project-Id") or req.header("X-Tenant-Id"),
                          roles=_split(req.header("X-Roles")),
                          auth_token=req.header("X-Auth-Token"))


SERVICE_CONTEXT = RequestContext(user_id="moorage-compute", project_id=None,
                                 roles=("service",))


def check_service_token(access: InternalAccess, req: ApiRequest) -> RequestContext:
    """The internal routes: the service token when one is configured; without one,
    anonymous writes only under the development flag (401 naming the option)."""
    refusal = access.refusal(req.method, req.header(TOKEN_HEADER))
    if refusal is not None:
        raise Unauthorized(refusal[0].upper() + refusal[1:] + ".")
    return SERVICE_CONTEXT


# What a compute host reads of the image service to boot a guest: an image's record
# and data, of any project (``moorage.virt.image_service``), with the service token.
_HOST_IMAGE_READ = re.compile(r"^/image/v2/images/[^/]+(/file)?$")
IMAGE_READER_CONTEXT = RequestContext(user_id="moorage-compute", project_id=None,
                                      roles=("service", "admin"))


def host_image_read(method: str, path: str, service_token: str | None) -> bool:
    """Whether a request is a compute host's read of an image (a GET of a record or its
    data carrying ``X-Service-Token``); the token itself is checked by the caller."""
    return (service_token is not None and method in READS
            and _HOST_IMAGE_READ.match(path) is not None)


def public_paths(conf: cfg.ConfigOpts) -> frozenset[str]:
    return PUBLIC_PATHS | {METRICS_PATH} if conf.api.public_metrics else PUBLIC_PATHS


def authenticator(conf: cfg.ConfigOpts) -> Callable[[ApiRequest], RequestContext]:
    """The function that turns a request into a context for this configuration."""
    inner = noauth2_context if conf.api.auth_strategy == NOAUTH2 else keystone_context
    public = public_paths(conf)
    access = InternalAccess.of(conf)

    def authenticate(req: ApiRequest) -> RequestContext:
        if req.path.startswith(INTERNAL_PREFIX):
            return check_service_token(access, req)
        if req.path in public:
            return ANONYMOUS
        token = req.header(TOKEN_HEADER)
        if host_image_read(req.method, req.path, token):
            if not access.holds(token):
                raise Unauthorized(WRONG_TOKEN[0].upper() + WRONG_TOKEN[1:] + ".")
            return IMAGE_READER_CONTEXT
        return inner(req)

    return authenticate


def wrap_keystone(app: WSGIApplication, conf: cfg.ConfigOpts) -> WSGIApplication:
    """keystonemiddleware's auth_token in front of the user routes (keystone strategy):
    not the public paths, nor the internal ones, which check the service token."""
    public = public_paths(conf)

    def unprotected(environ: dict[str, Any]) -> bool:
        path = environ.get("PATH_INFO", "")
        return path in public or path.startswith(INTERNAL_PREFIX) or host_image_read(
            environ.get("REQUEST_METHOD", ""), path, environ.get("HTTP_X_SERVICE_TOKEN"))

    return keystone.protect(app, conf, unprotected)
