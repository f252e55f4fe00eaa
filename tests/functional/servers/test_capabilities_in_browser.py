"""The capability page in a real browser (headless Chromium), as a non-admin user.

The compute API authenticates by the X-Auth-Token header, which a browser does not
send by itself: a portal in front of the API would add the user's token. The test
plays that portal, a small reverse proxy that adds a user's token to what Chromium
asks for (its own Accept header included, so the API chooses the page as it would
for a browser). It FAILS, saying how to install Chromium, when none is found.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lxml.html
import pytest
import requests

from tests.functional.run.test_html_in_browser import png_pixels, run_chromium
from tests.functional.servers.conftest import Cloud
from tests.functional.servers.test_capabilities import (
    E1000,
    PCNET,
    QXL,
    SECURE_BOOT,
    USER,
    assert_reveals_nothing,
    build_cloud,
)

# The page's table rules (page.STYLE): painted only if the CSP let the style apply.
RULE_COLOUR = (0xDD, 0xE2, 0xEA)
PASSED_ON = ("content-type", "content-security-policy", "vary", "cache-control",
             "x-content-type-options", "referrer-policy")


class Portal:
    """A reverse proxy to the compute API that authenticates every request as USER."""

    def __init__(self, api_url: str) -> None:
        self.seen: list[tuple[str, str]] = []  # (path, Accept) of each request
        portal = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                accept = self.headers.get("Accept", "")
                portal.seen.append((self.path, accept))
                answer = requests.get(api_url + self.path, timeout=60, headers={
                    "X-Auth-Token": USER, "Accept": accept})
                self.send_response(answer.status_code)
                for name in PASSED_ON:
                    if name in answer.headers:
                        self.send_header(name, answer.headers[name])
                self.send_header("content-length", str(len(answer.content)))
                self.end_headers()
                self.wfile.write(answer.content)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def portal(make_cloud: Any) -> Iterator[tuple[Cloud, Portal]]:
    cloud = build_cloud(make_cloud)
    running = Portal(cloud.api_url)
    yield cloud, running
    running.stop()


def test_capability_page_in_chromium_as_a_user(portal: tuple[Cloud, Portal],
                                               tmp_path: Path) -> None:
    cloud, proxy = portal
    url = proxy.url + "/v2.1/capabilities"
    dumped = run_chromium("--dump-dom", url, profile=tmp_path / "profile")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    path, accept = proxy.seen[0]
    assert path == "/v2.1/capabilities" and "text/html" in accept, proxy.seen

    dom = lxml.html.fromstring(dumped.stdout)
    assert dom.findtext(".//h1") == "Capabilities of this cloud"
    titles = [h.text_content() for h in dom.xpath("//h3[starts-with(@id, 'family-')]")]
    assert titles[:2] == ["Network card models", "Video models"]
    assert "Firmware and security" in titles
    rows = {row.get("data-trait"): [c.text_content() for c in row.xpath("td")]
            for row in dom.xpath("//tr[@data-trait]")}
    assert rows[E1000][:3] == ["e1000", E1000, "3"]
    assert rows[SECURE_BOOT][:3] == ["UEFI SECURE BOOT", SECURE_BOOT, "2"]
    assert rows["HW_ARCH_X86_64"][:3] == ["x86_64", "HW_ARCH_X86_64", "3"]
    assert PCNET not in rows and QXL not in rows
    properties = dom.xpath("//h3[@id='property-hw_vif_model']")[0].getparent().text_content()
    assert "hw_vif_model=e1000" in properties
    assert not dom.xpath("//script | //*[@src or @href]"), "the page must load nothing"
    assert_reveals_nothing(cloud, dumped.stdout, "the DOM")

    # The inline style applied under the page's Content-Security-Policy.
    shot = tmp_path / "page.png"
    painted = run_chromium(f"--screenshot={shot}", "--window-size=1000,1400",
                           "--force-device-scale-factor=1", url, profile=tmp_path / "profile")
    assert painted.returncode == 0 and shot.exists(), painted.stderr[-2000:]
    pixels = png_pixels(shot.read_bytes())
    colours = {tuple(int(c) for c in pixel) for pixel in pixels.reshape(-1, 3)}
    assert RULE_COLOUR in colours, "the page's style was not applied (blocked by its CSP?)"
