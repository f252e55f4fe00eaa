"""Images with real data for tests: a disk that boots and says so, and a stand-in image
service that serves it over HTTP as Glance's v2 API does.

``empty_disk(disk_format, directory)`` is an empty disk of that format (qemu-img's).
``boot_disk()`` is a 1 MiB raw disk whose first sector is a BIOS boot sector,
assembled here byte by byte: it writes ``BOOT_MARKER`` to the first serial port
(COM1, I/O port 0x3f8) and halts. A guest whose serial console shows the marker
ran code from its image: SeaBIOS found the disk, read it and jumped to it.

``ImageServiceStandIn`` STANDS IN FOR MOORAGE'S OWN IMAGE SERVICE (``/image`` on the
compute API's listener) in the driver-level tests of the image cache only, where a
test must count a host's downloads and slow them down so that two overlap; the
servers' end-to-end test (tests/functional/servers/test_libvirt_image_boot.py) boots
from the real service. It answers the two calls a compute host makes, as Glance does:

    GET /v2/images/{id}         the record: status, disk_format, size, checksum (MD5),
                                os_hash_algo (sha512), os_hash_value
    GET /v2/images/{id}/file    the data (404 for an unknown image)

and refuses a request without the service token (401). It counts the data requests
per image, and can be slowed down (``delay``) so that concurrent downloads overlap.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

BOOT_MARKER = b"MOORAGE-IMAGE-BOOTED"
SECTOR = 512
DISK_BYTES = 1 << 20
LOAD_ADDRESS = 0x7C00  # where the BIOS loads the boot sector and jumps to


def boot_sector(message: bytes = BOOT_MARKER + b"\r\n") -> bytes:
    """A 512-byte BIOS boot sector (16-bit real mode) that writes ``message`` to COM1
    and halts, with the 0x55AA signature."""
    code_before_message = 23  # the bytes of code below, the message follows them
    address = LOAD_ADDRESS + code_before_message
    code = b"".join([
        b"\xfa",                                  # 0  cli
        b"\x31\xc0",                              # 1  xor ax, ax
        b"\x8e\xd8",                              # 3  mov ds, ax   (ds:si is the message)
        b"\xfc",                                  # 5  cld          (lodsb counts up)
        b"\xbe" + address.to_bytes(2, "little"),  # 6  mov si, message
        b"\xba\xf8\x03",                          # 9  mov dx, 0x3f8  (COM1's data port)
        b"\xac",                                  # 12 next: lodsb  (al = [si++])
        b"\x84\xc0",                              # 13 test al, al
        b"\x74\x03",                              # 15 jz halt (+3)
        b"\xee",                                  # 17 out dx, al
        b"\xeb\xf8",                              # 18 jmp next (-8)
        b"\xf4",                                  # 20 halt: hlt
        b"\xeb\xfd",                              # 21 jmp halt (-3)
    ])
    assert len(code) == code_before_message
    sector = code + message + b"\x00"
    assert len(sector) <= SECTOR - 2, "the message does not fit in the boot sector"
    return sector.ljust(SECTOR - 2, b"\x00") + b"\x55\xaa"


def empty_disk(disk_format: str, directory: Path) -> bytes:
    """An empty 1 MiB disk in ``disk_format`` (qemu-img's): data an image service that
    inspects it (Moorage's, Glance's) takes for that format."""
    path = directory / f"empty.{disk_format}"
    subprocess.run(["qemu-img", "create", "-f", disk_format, str(path), "1M"], check=True,
                   capture_output=True)
    return path.read_bytes()


def boot_disk() -> bytes:
    """A raw disk of 1 MiB that boots ``boot_sector``."""
    return boot_sector().ljust(DISK_BYTES, b"\x00")


@dataclass
class StoredImage:
    data: bytes
    disk_format: str
    # What the record claims, when a test wants it to lie about the data.
    os_hash_value: str | None = None

    def record(self, image_id: str) -> dict[str, object]:
        return {
            "id": image_id, "name": f"image-{image_id[:8]}", "status": "active",
            "disk_format": self.disk_format, "container_format": "bare",
            "visibility": "public", "size": len(self.data),
            "checksum": hashlib.md5(self.data, usedforsecurity=False).hexdigest(),
            "os_hash_algo": "sha512",
            "os_hash_value": self.os_hash_value or hashlib.sha512(self.data).hexdigest(),
            "file": f"/v2/images/{image_id}/file", "self": f"/v2/images/{image_id}",
        }


@dataclass
class ImageServiceStandIn:
    """The stand-in, on a free port of 127.0.0.1 once started."""

    token: str
    # Where the API is mounted: "/image" answers as Moorage's service beside the
    # compute API will (the agent's default endpoint is [compute_agent] api_url/image).
    prefix: str = ""
    images: dict[str, StoredImage] = field(default_factory=dict)
    downloads: Counter[str] = field(default_factory=Counter)
    delay: float = 0.0
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        assert self._server is not None, "not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> ImageServiceStandIn:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True,
                         name="image-service-stand-in").start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                if self.headers.get("X-Service-Token") != standin.token:
                    self._send(401, b'{"error": "401 Unauthorized"}')
                    return
                if not self.path.startswith(standin.prefix + "/"):
                    self._send(404, b"no such route")
                    return
                parts = self.path[len(standin.prefix):].strip("/").split("/")
                if len(parts) not in (3, 4) or parts[:2] != ["v2", "images"] or (
                        len(parts) == 4 and parts[3] != "file"):
                    self._send(404, b"no such route")
                    return
                image_id = parts[2]
                stored = standin.images.get(image_id)
                if stored is None:
                    self._send(404, f"No image found with ID {image_id}".encode())
                elif len(parts) == 3:
                    self._send(200, json.dumps(stored.record(image_id)).encode(),
                               "application/json")
                else:
                    with standin._lock:
                        standin.downloads[image_id] += 1
                    time.sleep(standin.delay)
                    self._send(200, stored.data, "application/octet-stream")

            def _send(self, status: int, body: bytes, content_type: str = "text/plain"
                      ) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        return Handler
