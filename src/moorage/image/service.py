"""``ImageService``: what every image handler reaches through ``req.service``; the
compute API builds one for the image service it mounts (``moorage.api.image_service``)
and hands it the two things only it knows: how to tell its image cache that an
image changed (``changed``), and whether the hosts can boot an image (``admit``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from oslo_config import cfg
from sqlalchemy.engine import Connection

from moorage.db.database import Database
from moorage.image.filestore import FileStore
from moorage.image.policy import ImagePolicy
from moorage.model.image import Image

# The reason no host can boot ``image`` (changed from ``before``), or None.
Admission = Callable[[Image, Image | None], str | None]


def _admit_all(image: Image, before: Image | None) -> str | None:
    return None


def _tell_no_one(conn: Connection) -> None:
    """No cache to tell."""


@dataclass(frozen=True)
class ImageService:
    conf: cfg.ConfigOpts
    database: Database
    policy: ImagePolicy
    files: FileStore
    changed: Callable[[Connection], None] = _tell_no_one
    admit: Admission = _admit_all

    @classmethod
    def of(cls, conf: cfg.ConfigOpts, database: Database,
           changed: Callable[[Connection], None] = _tell_no_one,
           admit: Admission = _admit_all) -> ImageService:
        return cls(conf, database, ImagePolicy(conf), FileStore.of(conf), changed, admit)
