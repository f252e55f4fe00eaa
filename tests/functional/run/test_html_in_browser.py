"""The HTML report opened in a real browser (headless Chromium): its charts are there,
laid out and painted.

The RunResult is built by hand: this test is about the report, not about the run. It
FAILS, saying how to install Chromium, when no Chromium is found.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import zlib
from collections.abc import Mapping
from pathlib import Path

import lxml.html
import numpy as np
import pytest

from moorage.run.report import write_html
from moorage.run.report.svg import PALETTE
from moorage.run.results import (
    BootResult,
    Configuration,
    ConfigurationResult,
    Exclusion,
    RunResult,
)

CHROMIUM_ENV = "MOORAGE_TEST_CHROMIUM"
CHARTS = ("active", "no-valid-host", "reschedules", "candidates", "latency-p50", "latency-p95")
E1000 = "required trait COMPUTE_NET_VIF_MODEL_E1000 (hw_vif_model=e1000)"
Q35 = "required trait CUSTOM_MACHINE_Q35 (hw_machine_type=q35)"


def chromium() -> str:
    """The Chromium to use, or a failure that says how to get one."""
    for candidate in (os.environ.get(CHROMIUM_ENV), "chromium", "chromium-browser",
                      "google-chrome"):
        if candidate and (found := shutil.which(candidate)):
            return found
    pytest.fail("headless Chromium is needed to open the HTML report and was not found. "
                "Install it: `./dev test` as root runs tools/chromium.sh, or "
                "`apt-get install chromium` on Debian; or point "
                f"{CHROMIUM_ENV} at a Chromium or Chrome binary.", pytrace=False)


def boots(failed: Mapping[int, tuple[str, str | None]], rescheduled: set[int],
          spread: int) -> list[BootResult]:
    """Twenty boots; ``failed`` maps a boot to its fault and the constraint behind it."""
    result = []
    for index in range(20):
        fault, constraint = failed.get(index, (None, None))
        result.append(BootResult(
            index=index, image=f"image-{index % 4}", flavor="m1.small",
            status="ERROR" if fault else "ACTIVE",
            host=None if fault else f"kvm-{index % 4}",
            spawn_attempts=0 if fault == "NoValidHost" else 2 if index in rescheduled else 1,
            candidates=None if fault == "NoValidHost" else spread - index % 3,
            scheduling_seconds=0.004 + index * 0.0003 + spread * 0.0001,
            fault=fault, message=None if fault is None else f"{fault} for boot {index}",
            exclusions=() if constraint is None else (Exclusion(constraint, 9, 12),)))
    return result


def sample_run() -> RunResult:
    """Five configurations: the prefilters remove the reschedules, the legacy filter
    turns them into NoValidHost."""
    def configuration(name: str, description: str, result_boots: list[BootResult],
                      wall: float) -> ConfigurationResult:
        return ConfigurationResult(Configuration(name, description), result_boots, wall)

    no_host = {2: ("NoValidHost", E1000), 7: ("NoValidHost", E1000), 11: ("NoValidHost", Q35)}
    hosts = [
        *({"name": f"kvm-{i}", "group": "kvm", "driver": "libvirt", "real": True,
           "virt_type": "qemu"} for i in range(4)),
        *({"name": f"kvm-old-{i}", "group": "kvm-old", "driver": "libvirt", "real": False,
           "virt_type": "kvm"} for i in range(4)),
        *({"name": f"vc-{i}", "group": "vmware", "driver": "vmware", "real": False}
          for i in range(2)),
        *({"name": f"bm-{i}", "group": "ironic", "driver": "ironic", "real": False}
          for i in range(2)),
    ]
    return RunResult(
        cloud_name="example <mixed> cloud", cloud_file="examples/cloud.yaml", seed=42,
        hosts=hosts,
        workload=[{"index": i, "image": f"image-{i % 4}", "flavor": "m1.small"}
                  for i in range(20)],
        configurations=[
            configuration("prefilters off", "no request filter; late checks reschedule",
                          boots({5: ("MaxRetriesExceeded", None)}, {1, 3, 4, 8}, 12), 3.2),
            configuration("image-type filter", "query_placement_for_image_type_support",
                          boots({}, {1, 3, 4}, 10), 2.9),
            configuration("image-metadata filter", "image properties become required traits",
                          boots(dict(list(no_host.items())[:2]), {1}, 8), 2.7),
            configuration("both prefilters", "image type and image metadata",
                          boots(no_host, set(), 6), 2.5),
            configuration("ImagePropertiesFilter", "the legacy host filter",
                          boots(no_host, {3}, 12), 3.0),
        ],
        machine={"cpus": 8, "qemu": "8.2"},
        notes=["kvm-0..kvm-3 ran on real QEMU (TCG)",
               "kvm-old-0..kvm-old-3 from recorded domain capabilities"])


def run_chromium(*args: str, profile: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [chromium(), "--headless=new", "--disable-gpu", "--no-sandbox",
         f"--user-data-dir={profile}", "--hide-scrollbars", *args],
        capture_output=True, text=True, timeout=120, check=False)


def png_pixels(data: bytes) -> np.ndarray:
    """The RGB(A) pixels of an 8-bit, non-interlaced PNG (what Chromium writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    offset, idat, header = 8, b"", b""
    while offset < len(data):
        length, kind = struct.unpack(">I4s", data[offset:offset + 8])
        chunk = data[offset + 8:offset + 8 + length]
        if kind == b"IHDR":
            header = chunk
        elif kind == b"IDAT":
            idat += chunk
        offset += 12 + length
    width, height, depth, colour_type, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour_type in (2, 6) and not interlace, header
    channels = 3 if colour_type == 2 else 4
    stride = width * channels
    raw = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(height, stride + 1)
    image = np.zeros((height, stride), dtype=np.uint8)
    previous = np.zeros(stride, dtype=np.int32)
    for y in range(height):
        kind, line = raw[y, 0], raw[y, 1:].astype(np.int32)
        if kind == 0:
            row = line
        elif kind == 1:      # Sub: each byte adds the one a pixel to its left
            row = np.cumsum(line.reshape(width, channels), axis=0).reshape(stride) % 256
        elif kind == 2:      # Up
            row = (line + previous) % 256
        else:                # Average and Paeth depend on the byte just decoded
            row = np.array(_unfilter_row(kind, line.tolist(), previous.tolist(), channels),
                           dtype=np.int32)
        image[y] = row
        previous = row
    return image.reshape(height, width, channels)[:, :, :3]


def _unfilter_row(kind: int, line: list[int], previous: list[int],
                  channels: int) -> list[int]:
    row = [0] * len(line)
    for x, byte in enumerate(line):
        left = row[x - channels] if x >= channels else 0
        up = previous[x]
        if kind == 3:
            row[x] = (byte + (left + up) // 2) % 256
            continue
        up_left = previous[x - channels] if x >= channels else 0
        estimate = left + up - up_left
        by_left, by_up = abs(estimate - left), abs(estimate - up)
        by_up_left = abs(estimate - up_left)
        if by_left <= by_up and by_left <= by_up_left:
            nearest = left
        elif by_up <= by_up_left:
            nearest = up
        else:
            nearest = up_left
        row[x] = (byte + nearest) % 256
    return row


def test_html_report_renders_its_charts_in_chromium(tmp_path: Path) -> None:
    run = sample_run()
    page = tmp_path / "report.html"
    write_html(run, page)

    dumped = run_chromium("--dump-dom", page.as_uri(), profile=tmp_path / "profile")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    dom = lxml.html.fromstring(dumped.stdout)

    body = dom.find("body")
    assert body is not None
    assert body.get("data-rendered") == "yes", "the page's script did not run after load"
    assert body.get("data-charts") == str(len(CHARTS))
    assert body.get("data-bars-drawn") == str(len(CHARTS) * len(run.configurations))
    assert dom.findtext(".//title") == "Moorage run: example <mixed> cloud"

    names = [result.configuration.name for result in run.configurations]
    charts = dom.xpath("//svg[@data-chart]")
    assert [chart.get("data-chart") for chart in charts] == list(CHARTS)
    for chart in charts:
        bars = chart.xpath(".//rect[@class='bar']")
        assert [bar.get("data-configuration") for bar in bars] == names, chart.get("data-chart")
    active = {bar.get("data-configuration"): bar.get("data-value")
              for bar in dom.xpath("//svg[@data-chart='active']//rect[@class='bar']")}
    assert active == {result.configuration.name: str(result.active)
                      for result in run.configurations}

    failures = dom.xpath("//table[@class='failures']")[0].text_content()
    assert E1000 in failures and Q35 in failures and "MaxRetriesExceeded" in failures
    cloud = dom.xpath("//h2[text()='The cloud']/following-sibling::table[1]")[0]
    assert "4 on real QEMU" in cloud.text_content()
    assert "4 from recorded capabilities" in cloud.text_content()
    assert not dom.xpath("//*[@src or @href]"), "the report must not load anything"

    shot = tmp_path / "report.png"
    painted = run_chromium(f"--screenshot={shot}", "--window-size=1200,2400", page.as_uri(),
                           profile=tmp_path / "profile")
    assert painted.returncode == 0 and shot.exists(), painted.stderr[-2000:]
    assert shot.stat().st_size > 10_000, "the screenshot is nearly empty"
    pixels = png_pixels(shot.read_bytes())
    colours = {tuple(int(c) for c in pixel) for pixel in pixels[::4, ::4].reshape(-1, 3)}
    assert len(colours) > 20, "the screenshot is (nearly) uniform"
    for index in range(len(run.configurations)):
        rgb = tuple(int(PALETTE[index][i:i + 2], 16) for i in (1, 3, 5))
        assert rgb in colours, f"no bar painted in {PALETTE[index]} (configuration {index})"
