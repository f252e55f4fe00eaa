"""Image data on local disk (glance's file store): one file per image, named by its id,
in ``[image] filesystem_store_datadir``.

An upload is streamed to a temporary file in the same directory, hashed as it is read
(md5 for glance's ``checksum``, sha512 for ``os_hash_value``), its size held to
``[image] max_size`` while it arrives, its format checked (``moorage.image.inspector``)
once complete, and only then renamed to the image's name. Whatever refuses it (too
large, wrong or unsafe format, the client gone) removes the temporary file: the
directory never holds part of an image under an image's name.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from oslo_config import cfg

from moorage.image import inspector
from moorage.image.records import DataDigest

HASH_ALGORITHM = "sha512"
CHUNK = 1 << 16
TEMPORARY_PREFIX = ".upload-"
# An image id as a file name: no separators, nothing hidden.
_SAFE_NAME = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9_.-]*$")


class TooLarge(Exception):
    """The data passed ``max_size``."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"Image exceeds the size limit of {limit} bytes "
                         "([image] max_size).")
        self.limit = limit


class UnsafeName(ValueError):
    """An image id that cannot name a file."""


@dataclass(frozen=True)
class Staged:
    """A complete, checked upload waiting to be put in place."""

    path: Path
    digest: DataDigest


@dataclass(frozen=True)
class FileStore:
    directory: Path
    max_size: int

    @classmethod
    def of(cls, conf: cfg.ConfigOpts) -> FileStore:
        """The store ``[image]`` describes."""
        return cls(Path(conf.image.filesystem_store_datadir), int(conf.image.max_size))

    def path(self, image_id: str) -> Path:
        if not _SAFE_NAME.match(image_id):
            raise UnsafeName(f"Image id {image_id!r} cannot name a data file.")
        return self.directory / image_id

    def receive(self, chunks: Iterable[bytes], disk_format: str) -> Staged:
        """Write ``chunks`` to a temporary file, hashing and counting; TooLarge or
        inspector.FormatRefused (the file removed) when refused."""
        self.directory.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(prefix=TEMPORARY_PREFIX, dir=self.directory)
        path = Path(name)
        try:
            md5 = hashlib.md5(usedforsecurity=False)
            multihash = hashlib.new(HASH_ALGORITHM)
            size = 0
            with os.fdopen(handle, "wb") as out:
                for chunk in chunks:
                    size += len(chunk)
                    if size > self.max_size:
                        raise TooLarge(self.max_size)
                    md5.update(chunk)
                    multihash.update(chunk)
                    out.write(chunk)
            with path.open("rb") as data:
                found = inspector.check(disk_format, _reader(data), size)
        except BaseException:
            path.unlink(missing_ok=True)
            raise
        return Staged(path, DataDigest(size=size, checksum=md5.hexdigest(),
                                       os_hash_algo=HASH_ALGORITHM,
                                       os_hash_value=multihash.hexdigest(),
                                       virtual_size=found.virtual_size))

    def put_in_place(self, staged: Staged, image_id: str) -> None:
        os.replace(staged.path, self.path(image_id))

    def discard(self, staged: Staged) -> None:
        staged.path.unlink(missing_ok=True)

    def delete(self, image_id: str) -> None:
        with contextlib.suppress(UnsafeName):
            self.path(image_id).unlink(missing_ok=True)

    def open(self, image_id: str) -> IO[bytes] | None:
        """The image's data, or None when there is none."""
        try:
            return self.path(image_id).open("rb")
        except (FileNotFoundError, UnsafeName):
            return None


def _reader(data: IO[bytes]) -> inspector.Reader:
    def read(offset: int, length: int) -> bytes:
        if offset < 0:
            return b""
        data.seek(offset)
        return data.read(length)
    return read


def chunks_of(data: IO[bytes]) -> Iterator[bytes]:
    """A file's bytes in chunks, closing it at the end (or when the answer is dropped)."""
    try:
        while chunk := data.read(CHUNK):
            yield chunk
    finally:
        data.close()
