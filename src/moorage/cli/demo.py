"""``moorage placement demo``: a real placement server with the sample cloud, and a
short guide to querying it, until Ctrl-C."""

from __future__ import annotations

import argparse
import contextlib
import shlex
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

import os_resource_classes as orc
import os_traits as ot
from cliff.command import Command

from moorage.placement import sample
from moorage.placement.client import (
    DEFAULT_URL,
    MICROVERSION,
    URL_ENV,
    PlacementClient,
    PlacementError,
    ProviderQuery,
)
from moorage.placement.launcher import PlacementProcess, ServerStartError, free_port

DEFAULT_PORT = 8778
DEMO_TOKEN = "admin"


@dataclass(frozen=True)
class DemoQuery:
    """The query the guide runs live: what nova's prefilters would ask for an image
    with ``hw_vif_model=e1000``."""

    why: str
    query: ProviderQuery

    def url(self, base: str) -> str:
        params = "&".join(f"{k}={v}" for k, v in self.query.params())
        return f"{base}/allocation_candidates?{params}"


DEMO_QUERY = DemoQuery(
    why="which hosts can boot an image with hw_vif_model=e1000 (2 VCPU, 4 GiB, 20 GB)?\n"
        "  # the image property becomes a required trait, as nova's prefilters do",
    query=ProviderQuery(
        resources={orc.VCPU: 2, orc.MEMORY_MB: 4096, orc.DISK_GB: 20},
        required=[ot.COMPUTE_NET_VIF_MODEL_E1000],
    ),
)


@dataclass(frozen=True)
class DemoAnswer:
    hosts: list[tuple[str, str]]  # (name, uuid) of the hosts that can take it
    without_room: list[str]  # names of hosts with the traits but no room


def answer(client: PlacementClient, demo: DemoQuery = DEMO_QUERY) -> DemoAnswer:
    """Run ``demo`` against the service: which hosts match, and which have the traits
    but not the room."""
    found = client.allocation_candidates(demo.query)
    roots = sorted({found.summaries[uuid].root_uuid
                    for request in found.allocation_requests for uuid in request})
    by_uuid = {p.uuid: p for p in client.providers()}
    with_traits = client.providers(ProviderQuery(required=demo.query.required))
    return DemoAnswer(
        hosts=sorted((by_uuid[uuid].name, uuid) for uuid in roots),
        without_room=sorted(p.name for p in with_traits if p.root_uuid not in roots),
    )


def describe(result: DemoAnswer) -> str:
    count = len(result.hosts)
    line = (f"{count} host{'' if count == 1 else 's'} can take it: "
            + ", ".join(f"{name} ({uuid})" for name, uuid in result.hosts))
    if result.without_room:
        line += "\n  also with the trait, but without room: " + ", ".join(result.without_room)
    return line


def guide(url: str, workdir: Path, kept: bool, reloaded: bool, result: DemoAnswer) -> str:
    numa_host = sample.sample_uuid("kvm-numa-01")
    demo_url = DEMO_QUERY.url(url)
    env = "" if url == DEFAULT_URL else f"  export {URL_ENV}={url}\n\n"
    curl = (f"  curl -s -H 'X-Auth-Token: {DEMO_TOKEN}' "
            f"-H 'OpenStack-API-Version: placement {MICROVERSION}' \\\n"
            f"    {shlex.quote(demo_url)} | python3 -m json.tool")
    nfv = " \\\n    ".join(
        f"--resource {rc}={n} --resource {rc2}={n2}" for (rc, n), (rc2, n2) in
        [((orc.VCPU, 4), (orc.MEMORY_MB, 8192)), ((orc.DISK_GB, 40), (orc.SRIOV_NET_VF, 1))])
    data = (f"{workdir} (kept)" if kept else f"{workdir} (deleted on exit; --keep DIR keeps it)")
    loaded = "the sample cloud already there" if reloaded else "the sample cloud loaded"
    providers, instances = len(sample.CLOUD.providers), len(sample.CLOUD.instances)
    moorage = _command_name()
    return f"""\
Moorage placement is running at {url} with {loaded}:
{providers} providers (KVM q35 and pc hosts, a Ceph-backed host, a NUMA host with an SR-IOV NIC,
VMware, Ironic bare metal, a Ceph pool shared through an aggregate) and {instances} instances.
  data and server log: {data}
  auth: DEVELOPMENT noauth2 mode: tokens are not checked, the token "{DEMO_TOKEN}" is an
        administrator. Do not expose this server.

Try (in another terminal):
{env}  # {DEMO_QUERY.why}
{curl}

  # every provider, with its usage (used/capacity per class) and traits
  {moorage} placement provider list -c name -c usage -c traits

  # the NUMA host: two NUMA cells and an SR-IOV NIC below the compute node
  {moorage} placement provider tree {numa_host}

  # an NFV guest: CPU and memory from a NUMA cell, a VF from the NIC, disk from the Ceph pool
  {moorage} placement candidates {nfv}

  # why does a VMDK image with a virtio disk find no host?
  {moorage} placement candidates --resource VCPU=1 --resource MEMORY_MB=1024 \\
    --required {ot.COMPUTE_IMAGE_TYPE_VMDK} --required {ot.COMPUTE_STORAGE_BUS_VIRTIO}

The curl query, answered live: {describe(result)}

Press Ctrl-C to stop the server.
"""


class Demo(Command):
    """Run placement with a sample cloud and print how to query it (until Ctrl-C)."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("--port", type=int, default=DEFAULT_PORT,
                            help=f"TCP port on 127.0.0.1 (default {DEFAULT_PORT}; 0 for any "
                            "free port)")
        parser.add_argument("--keep", metavar="DIR", type=Path,
                            help="keep the database (and the sample cloud) in DIR, and reuse "
                            "it next time; default: a temporary directory")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> int:
        port = parsed_args.port or free_port()
        if not _port_is_free(port):
            raise PlacementError(f"port {port} on 127.0.0.1 is in use (another placement?); "
                                 "choose another with --port, or --port 0 for any")
        kept = parsed_args.keep is not None
        # Absolute: the server runs in this directory and names its database by path.
        workdir = (parsed_args.keep.expanduser().resolve() if kept
                   else Path(tempfile.mkdtemp(prefix="moorage-demo-")))
        server = PlacementProcess(workdir, port=port)
        with _first_signal_interrupts():
            try:
                self._run(server, workdir, kept)
            except KeyboardInterrupt:
                self.app.stdout.write("\nStopping placement ...\n")
            finally:
                server.stop()
                if not kept:
                    shutil.rmtree(workdir, ignore_errors=True)
        self.app.stdout.write("Placement stopped.\n")
        return 0

    def _run(self, server: PlacementProcess, workdir: Path, kept: bool) -> None:
        """Start the server, load the sample cloud, print the guide, wait."""
        out = self.app.stdout
        out.write(f"Starting placement on {server.url} ...\n")
        out.flush()
        _start(server)
        client = PlacementClient(server.url, DEMO_TOKEN)
        reloaded = sample.is_loaded(client)
        if not reloaded:
            sample.load(client)
        out.write("\n" + guide(server.url, workdir, kept, reloaded, answer(client)))
        out.flush()
        while True:
            time.sleep(3600)


def _command_name() -> str:
    """How the reader can run ``moorage``: by name when it is on the PATH, else by
    the path of this installation's script (``./dev run`` does not activate the venv)."""
    if shutil.which("moorage"):
        return "moorage"
    script = Path(sys.executable).parent / "moorage"
    return str(script) if script.exists() else f"{sys.executable} -m moorage"


def _start(server: PlacementProcess) -> None:
    try:
        server.start()
    except ServerStartError as exc:
        lines = [line for line in str(exc).splitlines() if line.strip()]
        raise PlacementError(f"the placement server did not start: {lines[-1]}") from None


def _port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@contextlib.contextmanager
def _first_signal_interrupts() -> Iterator[None]:
    """Ctrl-C, SIGTERM and SIGHUP stop the demo; later signals are ignored while it
    stops the server, which runs in its own session and must never be left behind.
    (SIGINT is handled here too: a shell starting the demo in the background may have
    ignored it.)"""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    interrupted = False

    def interrupt(signum: int, frame: FrameType | None) -> None:
        nonlocal interrupted
        if not interrupted:
            interrupted = True
            raise KeyboardInterrupt

    signals = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {sig: signal.signal(sig, interrupt) for sig in signals}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
