"""An image's data: ``PUT /v2/images/{id}/file`` and ``GET /v2/images/{id}/file``, as
glance answers them (the agents download images from here).

An upload moves the image queued -> saving (a 409 for an image in any other state,
so two uploads never race), streams the body into the file store, and moves it
saving -> active with its size and hashes. Anything that refuses the data (larger
than ``[image] max_size``: 413; not the declared format or unsafe: 400; a body cut
short: 400) leaves no file and puts the image back in queued.

A download streams the file with ``Content-MD5`` (the hex md5, glance's checksum);
an image without data is a 204, a deactivated one a 403 but to an administrator.
"""

from __future__ import annotations

from collections.abc import Iterator

from moorage.image import store
from moorage.image.common import visible_image
from moorage.image.errors import (
    BadRequest,
    Conflict,
    Forbidden,
    RequestEntityTooLarge,
    UnsupportedMediaType,
)
from moorage.image.filestore import Staged, TooLarge, UnsafeName, chunks_of
from moorage.image.http import Answer, ImageRequest, Streamed, no_content
from moorage.image.inspector import FormatRefused
from moorage.image.records import ImageStatus

OCTET_STREAM = "application/octet-stream"
# The states in which an image's data is stored.
WITH_DATA = (ImageStatus.ACTIVE, ImageStatus.DEACTIVATED)


class Truncated(Exception):
    """The body ended before its Content-Length."""


def _counted(chunks: Iterator[bytes], expected: int | None) -> Iterator[bytes]:
    received = 0
    for chunk in chunks:
        received += len(chunk)
        yield chunk
    if expected is not None and received != expected:
        raise Truncated(f"The upload ended after {received} of {expected} bytes.")


def _declared_length(req: ImageRequest) -> int | None:
    text = req.environ.get("CONTENT_LENGTH") or ""
    if not text:
        return None
    if not text.isdigit():
        raise BadRequest("Content-Length must be an integer.")
    return int(text)


def upload(req: ImageRequest) -> Answer:
    image = visible_image(req)
    req.authorize("upload_image", owner=image.owner)
    if req.media_type != OCTET_STREAM:
        raise UnsupportedMediaType(f"Unsupported Content-Type {req.media_type or '(none)'}; "
                                   f"allowed: {OCTET_STREAM}.")
    if image.disk_format is None or image.container_format is None:
        raise BadRequest("Properties disk_format, container_format must be set prior to "
                         "saving data.")
    files = req.service.files
    try:
        files.path(image.id)
    except UnsafeName as exc:
        raise BadRequest(str(exc)) from None
    length = _declared_length(req)
    if length is not None and length > files.max_size:
        raise RequestEntityTooLarge(TooLarge(files.max_size).args[0])
    database, changed = req.service.database, req.service.changed
    with database.writer() as writer:
        if not store.move_status(writer.conn, image.id, ImageStatus.QUEUED,
                                 ImageStatus.SAVING, changed=changed):
            current = store.load(writer.conn, image.id)
            state = current.status.value if current is not None else "deleted"
            raise Conflict(f"Image status transition from {state} to saving is not "
                           "allowed.")
    staged: Staged | None = None
    try:
        staged = files.receive(_counted(req.stream(), length), image.disk_format)
        files.put_in_place(staged, image.id)
        with database.writer() as writer:
            stored = store.move_status(writer.conn, image.id, ImageStatus.SAVING,
                                       ImageStatus.ACTIVE, staged.digest, changed)
        if not stored:
            files.delete(image.id)
            raise Conflict(f"Image {image.id} was deleted while its data was uploaded.")
    except BaseException as exc:
        if staged is not None and not isinstance(exc, Conflict):
            files.delete(image.id)
        with database.writer() as writer:
            store.move_status(writer.conn, image.id, ImageStatus.SAVING, ImageStatus.QUEUED,
                              changed=changed)
        if isinstance(exc, TooLarge):
            raise RequestEntityTooLarge(str(exc)) from None
        if isinstance(exc, FormatRefused | Truncated):
            raise BadRequest(str(exc)) from None
        raise
    return no_content()


def download(req: ImageRequest) -> Answer:
    image = visible_image(req)
    req.authorize("download_image", owner=image.owner)
    if image.status is ImageStatus.DEACTIVATED and not req.caller.is_admin:
        raise Forbidden("The requested image has been deactivated. Image data download "
                        "is forbidden.")
    if image.status not in WITH_DATA or image.size is None:
        return no_content()
    data = req.service.files.open(image.id)
    if data is None:
        return no_content()
    headers = [("Content-MD5", image.checksum)] if image.checksum else []
    return Streamed(chunks_of(data), image.size, headers=headers)
