"""The image service (``moorage.image``) on the compute API's listener, at ``/image``:
its catalog endpoint is ``http://HOST:PORT/image``, as devstack serves glance.

The compute API lends it what only it has: its authentication (the same tokens, the
same contexts, ``moorage.api.auth``), its database (the images' rows are the ones its
server create path reads), a bump of its definitions version on every image change
(so ``Definitions`` forgets cached images), and the image admission (``[api]
refuse_unbootable_images`` holds for images written here too).
"""

from __future__ import annotations

from collections.abc import Callable
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

from oslo_config import cfg
from sqlalchemy.engine import Connection

from moorage.api import image_admission
from moorage.api.context import RequestContext
from moorage.api.errors import ApiError
from moorage.api.http import ApiRequest
from moorage.api.state import ApiState
from moorage.api.storage import catalog_state
from moorage.image import errors
from moorage.image.app import build_app
from moorage.image.filestore import FileStore
from moorage.image.policy import Caller
from moorage.image.service import ImageService
from moorage.model.image import Image

# The version documents below it are public (moorage.api.auth.IMAGE_VERSIONS).
PREFIX = "/image"


def definitions_changed(conn: Connection) -> None:
    """Tell the compute API's image cache that an image changed (in the writing
    transaction)."""
    catalog_state.bump(conn, definitions=True)


def data_files(conf: cfg.ConfigOpts) -> FileStore:
    """Where the image service keeps image data (the legacy delete removes it too)."""
    return FileStore.of(conf)


def image_service(state: ApiState) -> ImageService:
    def admit(image: Image, before: Image | None) -> str | None:
        try:
            image_admission.admit(state, image, before)
        except ApiError as exc:
            return exc.message
        return None
    return ImageService.of(state.conf, state.database, changed=definitions_changed, admit=admit)


def mount(compute: WSGIApplication, state: ApiState,
          authenticate: Callable[[ApiRequest], RequestContext]) -> WSGIApplication:
    """``compute`` with the image service answering below ``PREFIX``."""

    def identify(environ: WSGIEnvironment) -> Caller:
        # Authenticated on its full path (/image/...), never taken for an internal one.
        seen = {**environ, "PATH_INFO": PREFIX + (environ.get("PATH_INFO") or "")}
        try:
            return authenticate(ApiRequest(seen, state))
        except ApiError as exc:
            raise errors.Unauthorized(exc.message) from None

    # Counted on the compute API's /metrics, with the prefix in the route label.
    images = build_app(image_service(state), identify, state.metrics.observe)

    def application(environ: WSGIEnvironment, start_response: StartResponse
                    ) -> list[bytes] | object:
        path = environ.get("PATH_INFO", "") or ""
        if path == PREFIX or path.startswith(PREFIX + "/"):
            environ["SCRIPT_NAME"] = environ.get("SCRIPT_NAME", "") + PREFIX
            environ["PATH_INFO"] = path[len(PREFIX):] or "/"
            return images(environ, start_response)
        return compute(environ, start_response)

    return application  # type: ignore[return-value]
