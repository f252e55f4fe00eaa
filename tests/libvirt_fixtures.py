"""Fixtures for tests that need a real libvirt and QEMU (TCG guests).

They use libvirt's embedded QEMU driver (``qemu:///embed?root=DIR``): no daemon,
one root per test process. When libvirt-python or QEMU is missing, every test
that asks for them FAILS saying so, unless ``MOORAGE_TEST_SKIP_LIBVIRT=1`` says to
skip them explicitly, in which case the run ends with a banner. ``./dev test``
installs both when it runs as root on Debian (tools/libvirt.sh).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.not_run import count_not_run

SKIP_ENV = "MOORAGE_TEST_SKIP_LIBVIRT"
NOT_RUN = "libvirt test NOT RUN"


def _missing() -> str | None:
    """Why libvirt tests cannot run here, or None."""
    try:
        import libvirt  # noqa: F401
    except ImportError:
        return "libvirt-python is not installed (pip install -e '.[libvirt]')"
    if shutil.which("qemu-system-x86_64") is None:
        return "QEMU (qemu-system-x86_64) is not installed"
    if not Path("/usr/share/libvirt/schemas/domain.rng").exists():
        return "libvirt's RNG schemas (/usr/share/libvirt/schemas) are not installed"
    return None


def require_libvirt(request: pytest.FixtureRequest) -> None:
    """Fail (or, when asked to, skip loudly) when libvirt and QEMU are not available."""
    import os

    reason = _missing()
    if reason is None:
        return
    if os.environ.get(SKIP_ENV) == "1":
        pytest.skip(f"{NOT_RUN}: {reason}")
    pytest.fail(
        f"libvirt is not available: {reason}. As root on Debian, ./dev test installs it "
        f"(tools/libvirt.sh); set {SKIP_ENV}=1 to skip these tests explicitly."
    )


@pytest.fixture(scope="session")
def libvirt_embed_uri(request: pytest.FixtureRequest) -> Iterator[str]:
    """A libvirt URI running QEMU from this test process (no daemon), as root."""
    require_libvirt(request)
    # A short root of its own, not under tmp_path_factory: QEMU's monitor socket lives
    # under it, a UNIX socket's path must fit in 108 bytes, and an xdist worker's
    # temporary directory (.../pytest-N/popen-gw0/) made it too long.
    root = Path(tempfile.mkdtemp(prefix="moorage-lv-"))
    (root / "etc").mkdir()
    # stdio_handler: QEMU's output goes to a file, not to virtlogd (no daemon here:
    # without it every guest start fails "Failed to connect socket to virtlogd-sock").
    # swtpm (emulated TPMs) runs as root too: as Debian's "tss" it cannot enter the
    # 0700 temporary directory the root lives in.
    (root / "etc" / "qemu.conf").write_text(
        'user = "root"\ngroup = "root"\nstdio_handler = "file"\n'
        'swtpm_user = "root"\nswtpm_group = "root"\n')
    yield f"qemu:///embed?root={root}"
    # The connections first: the embedded driver's root must outlive them.
    from moorage.virt.libvirt import host

    host._close_all()
    shutil.rmtree(root, ignore_errors=True)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    not_run = count_not_run(terminalreporter, NOT_RUN)
    if not_run:
        terminalreporter.write_sep("!", "LIBVIRT TESTS NOT RUN", red=True, bold=True)
        terminalreporter.write_line(
            f"{not_run} libvirt tests were skipped because {SKIP_ENV}=1. Run ./dev test "
            "as root on Debian to run them."
        )
