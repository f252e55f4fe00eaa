"""``moorage placement provider|candidates|demo`` against real servers over HTTP.

Most tests run the command in-process (``moorage.cli.main.main``) against one
server holding the sample cloud, loaded through the API, and check the output
against the sample's own description; a few run it as a subprocess, as a user would.
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import os_resource_classes as orc
import os_traits as ot
import pytest
import requests

from moorage.placement import client as placement_client
from moorage.placement import sample
from moorage.placement.launcher import free_port
from moorage.placement.storage.bulk import ProviderSpec
from tests.cli_runner import Run, run_moorage
from tests.conftest import PlacementClient

CLOUD = sample.CLOUD
NFV_REQUEST = ["--resource", "VCPU=4", "--resource", "MEMORY_MB=8192",
               "--resource", "DISK_GB=40", "--resource", "SRIOV_NET_VF=1"]


@pytest.fixture(scope="module")
def cloud_url(shared_placement: PlacementClient) -> str:
    """A server holding the sample cloud, loaded through the API."""
    sample.load(placement_client.PlacementClient(shared_placement.url, "admin"))
    return shared_placement.url


@pytest.fixture
def moorage(capsys: pytest.CaptureFixture[str]) -> Callable[..., Run]:
    """Run ``moorage ARGS`` in-process; cliff's log handlers are removed afterwards."""

    def run(*argv: str) -> Run:
        return run_moorage(capsys, list(argv))

    return run


def table(text: str) -> list[list[str]]:
    """The cells of a cliff table, header row first."""
    return [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in text.splitlines() if line.startswith("|")]


def spec_named(name: str) -> ProviderSpec:
    return CLOUD.provider(name)


def root_of(spec: ProviderSpec) -> ProviderSpec:
    while spec.parent:
        spec = next(s for s in CLOUD.providers if s.uuid == spec.parent)
    return spec


def expected_usage(spec: ProviderSpec) -> dict[str, dict[str, int]]:
    used = CLOUD.usage(spec.name)
    return {rc: {"used": used.get(rc, 0), "capacity": inv.capacity}
            for rc, inv in spec.inventories.items()}


def fits(spec: ProviderSpec, rc: str, amount: int) -> bool:
    """Whether ``spec`` alone could take ``amount`` of ``rc`` now."""
    inv = spec.inventories.get(rc)
    return (inv is not None and inv.admits(amount)
            and CLOUD.usage(spec.name).get(rc, 0) + amount <= inv.capacity)


# -- the sample cloud -----------------------------------------------------------
def test_sample_cloud_uses_real_vocabulary() -> None:
    standard_traits = set(ot.get_traits())
    for spec in CLOUD.providers:
        assert {t for t in spec.traits if not t.startswith("CUSTOM_")} <= standard_traits
        assert {rc for rc in spec.inventories if not rc.startswith("CUSTOM_")} <= set(
            orc.STANDARDS)
    classes, traits = CLOUD.custom_names()
    assert classes == {sample.BAREMETAL_CLASS} and traits == {sample.RAID_TRAIT}


def test_sample_cloud_is_stored_as_described(cloud_url: str) -> None:
    client = placement_client.PlacementClient(cloud_url)
    stored = {p.name: p for p in client.providers()}
    assert set(stored) == {s.name for s in CLOUD.providers}
    for spec in CLOUD.providers:
        detail = client.detail(stored[spec.name], aggregates=True)
        assert detail.provider.uuid == spec.uuid
        assert detail.provider.parent_uuid == spec.parent
        assert detail.inventories == spec.inventories
        assert detail.traits == sorted(spec.traits)
        assert detail.aggregates == sorted(spec.aggregates)
        assert detail.usages == {rc: CLOUD.usage(spec.name).get(rc, 0)
                                 for rc in spec.inventories}
    assert sample.is_loaded(client)


# -- provider list -----------------------------------------------------------------
def test_provider_list_json_matches_the_data(moorage: Callable[..., Run],
                                             cloud_url: str) -> None:
    run = moorage("placement", "provider", "list", "-f", "json",
                  "--os-placement-url", cloud_url)
    assert run.code == 0, run.err
    rows = {row["name"]: row for row in run.json()}
    assert set(rows) == {s.name for s in CLOUD.providers}
    for spec in CLOUD.providers:
        row = rows[spec.name]
        assert row["uuid"] == spec.uuid
        assert row["parent"] == spec.parent
        assert row["root"] == root_of(spec).uuid
        assert row["traits"] == sorted(spec.traits)
        assert row["usage"] == expected_usage(spec)
        assert row["generation"] >= 1


def test_provider_list_table(moorage: Callable[..., Run], cloud_url: str) -> None:
    run = moorage("placement", "provider", "list", "--os-placement-url", cloud_url)
    assert run.code == 0, run.err
    header, *rows = table(run.out)
    assert header == ["uuid", "name", "generation", "parent", "root", "traits", "usage"]
    by_name = {row[1]: dict(zip(header, row, strict=True)) for row in rows}
    assert by_name["kvm-pc-02"]["usage"] == "VCPU 8/64, MEMORY_MB 59392/61440, DISK_GB 200/500"
    assert by_name["ceph-pool-01"]["usage"] == "DISK_GB 120/100000"
    assert by_name["ironic-node-01"]["traits"] == "COMPUTE_NODE, CUSTOM_RAID5"
    assert by_name["kvm-numa-01"]["usage"] == ""
    assert by_name["kvm-numa-01-pf0"]["parent"] == spec_named("kvm-numa-01").uuid
    assert by_name["vmware-01"]["parent"] == "None"


def test_provider_list_selected_columns(moorage: Callable[..., Run], cloud_url: str) -> None:
    run = moorage("placement", "provider", "list", "-f", "value", "-c", "name",
                  "--sort-column", "name", "--os-placement-url", cloud_url)
    assert run.code == 0, run.err
    assert run.out.split() == sorted(s.name for s in CLOUD.providers)


PROVIDER_FILTERS: list[tuple[list[str], Callable[[ProviderSpec], bool]]] = [
    (["--required", ot.COMPUTE_NET_VIF_MODEL_E1000],
     lambda s: ot.COMPUTE_NET_VIF_MODEL_E1000 in s.traits),
    (["--required", f"!{ot.COMPUTE_NODE}"], lambda s: ot.COMPUTE_NODE not in s.traits),
    (["--required", f"in:{ot.COMPUTE_IMAGE_TYPE_VMDK},{ot.COMPUTE_STORAGE_BUS_FDC}"],
     lambda s: bool({ot.COMPUTE_IMAGE_TYPE_VMDK, ot.COMPUTE_STORAGE_BUS_FDC} & s.traits)),
    (["--required", ot.COMPUTE_IMAGE_TYPE_RAW, "--required", f"!{ot.COMPUTE_IMAGE_TYPE_QCOW2}"],
     lambda s: ot.COMPUTE_IMAGE_TYPE_RAW in s.traits
     and ot.COMPUTE_IMAGE_TYPE_QCOW2 not in s.traits),
    (["--member-of", sample.CEPH_AGGREGATE], lambda s: sample.CEPH_AGGREGATE in s.aggregates),
    (["--resource", "MEMORY_MB=4096"], lambda s: fits(s, orc.MEMORY_MB, 4096)),
    (["--resource", "SRIOV_NET_VF=1"], lambda s: fits(s, orc.SRIOV_NET_VF, 1)),
    (["--resource", "VCPU=8", "--required", ot.HW_CPU_X86_AVX512F],
     lambda s: fits(s, orc.VCPU, 8) and ot.HW_CPU_X86_AVX512F in s.traits),
    (["--name", "vmware-01"], lambda s: s.name == "vmware-01"),
    (["--in-tree", sample.sample_uuid("kvm-numa-01-numa1")],
     lambda s: root_of(s).name == "kvm-numa-01"),
]


@pytest.mark.parametrize(("args", "selects"), PROVIDER_FILTERS,
                         ids=[" ".join(args) for args, _ in PROVIDER_FILTERS])
def test_provider_list_filters(moorage: Callable[..., Run], cloud_url: str, args: list[str],
                               selects: Callable[[ProviderSpec], bool]) -> None:
    run = moorage("placement", "provider", "list", "-f", "json", "-c", "name", *args,
                  "--os-placement-url", cloud_url)
    assert run.code == 0, run.err
    expected = {s.name for s in CLOUD.providers if selects(s)}
    assert expected, "a filter case must select something"
    assert {row["name"] for row in run.json()} == expected


def test_provider_list_reads_traits_per_trait_for_many_providers(
        moorage: Callable[..., Run], placement: PlacementClient) -> None:
    """Past a few dozen providers, traits come from one query per trait in use; the
    answer must be the same as reading each provider's traits."""
    traits = [ot.HW_CPU_X86_AVX, ot.HW_CPU_X86_AVX2, ot.COMPUTE_NODE]
    expected: dict[str, list[str]] = {}
    for i in range(80):
        uuid = placement.create_provider(f"many-{i:02d}")
        mine = sorted(t for n, t in enumerate(traits) if i % (n + 2) == 0)
        placement.put(f"/resource_providers/{uuid}/traits",
                      json={"traits": mine, "resource_provider_generation": 0}, expect=200)
        expected[f"many-{i:02d}"] = mine
    client = placement_client.PlacementClient(placement.url)
    assert client.traits_by_trait(client.providers(), None) is not None  # the path taken
    run = moorage("placement", "provider", "list", "-f", "json", "-c", "name", "-c", "traits",
                  "--os-placement-url", placement.url)
    assert run.code == 0, run.err
    assert {row["name"]: row["traits"] for row in run.json()} == expected


# -- provider show and tree ---------------------------------------------------------------
def test_provider_show_json(moorage: Callable[..., Run], cloud_url: str) -> None:
    spec = spec_named("kvm-ceph-01")
    run = moorage("placement", "provider", "show", spec.uuid, "-f", "json",
                  "--os-placement-url", cloud_url)
    assert run.code == 0, run.err
    shown = run.json()
    assert shown["name"] == "kvm-ceph-01" and shown["uuid"] == spec.uuid
    assert shown["parent"] is None and shown["root"] == spec.uuid
    assert shown["aggregates"] == [sample.CEPH_AGGREGATE]
    assert shown["traits"] == sorted(spec.traits)
    assert shown["usage"] == expected_usage(spec)
    assert set(shown["inventories"]) == set(spec.inventories)
    for rc, inv in spec.inventories.items():
        assert shown["inventories"][rc] == {
            "total": inv.total, "reserved": inv.reserved, "min_unit": inv.min_unit,
            "max_unit": inv.max_unit, "step_size": inv.step_size,
            "allocation_ratio": inv.allocation_ratio, "capacity": inv.capacity}


def test_provider_show_table(moorage: Callable[..., Run], cloud_url: str) -> None:
    spec = spec_named("ironic-node-01")
    run = moorage("placement", "provider", "show", spec.uuid, "--os-placement-url", cloud_url)
    assert run.code == 0, run.err
    fields = {row[0]: row[1] for row in table(run.out)}
    assert fields["name"] == "ironic-node-01"
    assert fields["usage"] == "CUSTOM_BAREMETAL_GOLD 1/1"
    assert fields["inventories"] == ("CUSTOM_BAREMETAL_GOLD: total 1, reserved 0, "
                                     "allocation_ratio 1, min_unit 1, max_unit 1, step_size 1")
    assert fields["traits"] == "COMPUTE_NODE, CUSTOM_RAID5"
    assert fields["aggregates"] == ""


def test_provider_tree_table_from_a_child(moorage: Callable[..., Run], cloud_url: str) -> None:
    run = moorage("placement", "provider", "tree", sample.sample_uuid("kvm-numa-01-pf0"),
                  "--os-placement-url", cloud_url)
    assert run.code == 0, run.err
    header, *rows = table(run.out)
    assert header == ["name", "uuid", "generation", "usage", "traits"]
    assert [(row[0], row[1]) for row in rows] == [
        ("kvm-numa-01", sample.sample_uuid("kvm-numa-01")),
        ("├── kvm-numa-01-numa0", sample.sample_uuid("kvm-numa-01-numa0")),
        ("├── kvm-numa-01-numa1", sample.sample_uuid("kvm-numa-01-numa1")),
        ("└── kvm-numa-01-pf0", sample.sample_uuid("kvm-numa-01-pf0")),
    ]
    assert rows[1][3] == "VCPU 8/128, MEMORY_MB 16384/126976"
    assert rows[3][3:] == ["SRIOV_NET_VF 2/16", "HW_NIC_SRIOV, HW_NIC_SRIOV_TRUSTED"]


def test_provider_tree_json_is_nested(moorage: Callable[..., Run], cloud_url: str) -> None:
    run = moorage("placement", "provider", "tree", sample.sample_uuid("kvm-numa-01"),
                  "-f", "json", "--os-placement-url", cloud_url)
    assert run.code == 0, run.err
    tree = run.json()
    assert tree["name"] == "kvm-numa-01"
    assert tree["traits"] == sorted(spec_named("kvm-numa-01").traits)
    assert [child["name"] for child in tree["children"]] == [
        "kvm-numa-01-numa0", "kvm-numa-01-numa1", "kvm-numa-01-pf0"]
    for child in tree["children"]:
        assert child["usage"] == expected_usage(spec_named(child["name"]))
        assert child["children"] == []


def test_provider_tree_of_a_lone_provider(moorage: Callable[..., Run], cloud_url: str) -> None:
    run = moorage("placement", "provider", "tree", sample.sample_uuid("vmware-01"),
                  "-f", "yaml", "--os-placement-url", cloud_url)
    assert run.code == 0, run.err
    assert "name: vmware-01\n" in run.out and "children: []\n" in run.out


# -- candidates ------------------------------------------------------------------------------
CANDIDATE_CASES: list[tuple[list[str], set[str]]] = [
    # kvm-pc-02 has the NIC model too, but only 2048 MB of memory left.
    (["--resource", "VCPU=2", "--resource", "MEMORY_MB=4096", "--resource", "DISK_GB=20",
      "--required", ot.COMPUTE_NET_VIF_MODEL_E1000], {"kvm-pc-01", "vmware-01"}),
    # Only the NUMA host has VFs; its disk comes from the shared Ceph pool.
    (NFV_REQUEST, {"kvm-numa-01"}),
    # No qcow2: the two Ceph-backed hosts (disk from the pool) and VMware.
    (["--resource", "VCPU=1", "--resource", "MEMORY_MB=1024", "--resource", "DISK_GB=10",
      "--forbidden", ot.COMPUTE_IMAGE_TYPE_QCOW2], {"kvm-ceph-01", "kvm-numa-01", "vmware-01"}),
    (["--resource", "VCPU=1", "--resource", "DISK_GB=10", "--member-of",
      sample.CEPH_AGGREGATE], {"kvm-ceph-01", "kvm-numa-01"}),
    (["--resource", "VCPU=64", "--required", ot.HW_CPU_X86_AMD_SEV], {"kvm-q35-02"}),
]


@pytest.mark.parametrize(("args", "hosts"), CANDIDATE_CASES,
                         ids=[" ".join(args) for args, _ in CANDIDATE_CASES])
def test_candidates_hosts(moorage: Callable[..., Run], cloud_url: str, args: list[str],
                          hosts: set[str]) -> None:
    run = moorage("placement", "candidates", *args, "-f", "json",
                  "--os-placement-url", cloud_url)
    assert run.code == 0, run.err
    rows = run.json()
    assert {row["host"] for row in rows} == hosts
    for row in rows:
        assert row["host_uuid"] == sample.sample_uuid(row["host"])


def test_candidates_show_where_each_amount_comes_from(moorage: Callable[..., Run],
                                                      cloud_url: str) -> None:
    run = moorage("placement", "candidates", *NFV_REQUEST, "-f", "json",
                  "--os-placement-url", cloud_url)
    assert run.code == 0, run.err
    rows = run.json()
    # numa0 or numa1 for each of VCPU and MEMORY_MB: four combinations.
    assert len(rows) == 4
    for row in rows:
        taken: dict[str, dict[str, int]] = {}
        for part in row["allocation"]:
            assert part["uuid"] == sample.sample_uuid(part["provider"])
            for rc, amount in part["resources"].items():
                taken.setdefault(rc, {})[part["provider"]] = amount
        assert taken[orc.DISK_GB] == {"ceph-pool-01": 40}
        assert taken[orc.SRIOV_NET_VF] == {"kvm-numa-01-pf0": 1}
        assert set(taken[orc.VCPU]) <= {"kvm-numa-01-numa0", "kvm-numa-01-numa1"}
        assert row["allocation"][-1]["provider"] == "ceph-pool-01"  # shared ones last


def test_candidates_table_and_limit(moorage: Callable[..., Run], cloud_url: str) -> None:
    run = moorage("placement", "candidates", *NFV_REQUEST, "--limit", "1",
                  "--os-placement-url", cloud_url)
    assert run.code == 0, run.err
    header, *rows = table(run.out)
    assert header == ["host", "host_uuid", "allocation"]
    assert len(rows) == 1
    host, host_uuid, allocation = rows[0]
    assert (host, host_uuid) == ("kvm-numa-01", sample.sample_uuid("kvm-numa-01"))
    assert "SRIOV_NET_VF 1 on kvm-numa-01-pf0" in allocation
    assert allocation.endswith("; DISK_GB 40 on ceph-pool-01")


def test_no_candidates_explains_each_part(moorage: Callable[..., Run], cloud_url: str) -> None:
    run = moorage("placement", "candidates", "--resource", "VCPU=1",
                  "--required", ot.COMPUTE_IMAGE_TYPE_VMDK,
                  "--required", ot.COMPUTE_STORAGE_BUS_VIRTIO,
                  "--forbidden", ot.HW_CPU_X86_SVM, "-f", "json",
                  "--os-placement-url", cloud_url)
    assert run.code == 0, run.err
    assert run.json() == []
    counts = {label.strip(): int(count) for label, count in
              re.findall(r"^  (.+?)\s+(\d+) providers?$", run.err, re.MULTILINE)}

    def having(trait: str) -> int:
        return sum(trait in s.traits for s in CLOUD.providers)

    assert counts == {
        "resources VCPU:1": sum(fits(s, orc.VCPU, 1) for s in CLOUD.providers),
        f"required {ot.COMPUTE_IMAGE_TYPE_VMDK}": having(ot.COMPUTE_IMAGE_TYPE_VMDK),
        f"required {ot.COMPUTE_STORAGE_BUS_VIRTIO}": having(ot.COMPUTE_STORAGE_BUS_VIRTIO),
        f"forbidden {ot.HW_CPU_X86_SVM}": len(CLOUD.providers) - having(ot.HW_CPU_X86_SVM),
        "all the traits on one provider": 0,
    }
    assert counts[f"required {ot.COMPUTE_IMAGE_TYPE_VMDK}"] == 1


# -- errors: one line, exit code 1, no traceback ----------------------------------------------
ERROR_CASES: list[tuple[list[str], str]] = [
    (["placement", "provider", "show", "00000000-0000-0000-0000-000000000404"],
     r"GET /resource_providers/00000000-0000-0000-0000-000000000404: 404 Not Found: "
     r"No resource provider with uuid 00000000-0000-0000-0000-000000000404 found"),
    (["placement", "provider", "tree", "00000000-0000-0000-0000-000000000404"],
     r"GET /resource_providers/00000000-0000-0000-0000-000000000404: 404 Not Found: "
     r"No resource provider with uuid 00000000-0000-0000-0000-000000000404 found"),
    (["placement", "provider", "list", "--required", "CUSTOM_NO_SUCH_TRAIT"],
     r"GET /resource_providers: 400 Bad Request: .*No such trait\(s\): CUSTOM_NO_SUCH_TRAIT"),
    (["placement", "candidates", "--resource", "CUSTOM_NOPE=1"],
     r"GET /allocation_candidates: 400 Bad Request: .*CUSTOM_NOPE"),
    (["placement", "provider", "list", "--os-token", "someone"],
     r"GET /resource_providers: 403 Forbidden: Policy does not allow "
     r"placement:resource_providers:list to be performed\."),
]


@pytest.mark.parametrize(("argv", "message"), ERROR_CASES,
                         ids=[" ".join(argv[1:4]) for argv, _ in ERROR_CASES])
def test_api_errors_are_one_line(moorage: Callable[..., Run], cloud_url: str,
                                 argv: list[str], message: str) -> None:
    run = moorage(*argv, "--os-placement-url", cloud_url)
    assert run.code == 1
    assert run.out == ""
    assert re.fullmatch(message + r"[^\n]*\n", run.err), run.err


@pytest.mark.parametrize("argv", [
    ["placement", "provider", "list"],
    ["placement", "provider", "show", sample.sample_uuid("vmware-01")],
    ["placement", "candidates", "--resource", "VCPU=1"],
])
def test_unreachable_service(moorage: Callable[..., Run], argv: list[str]) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    run = moorage(*argv, "--os-placement-url", url)
    assert run.code == 1
    assert run.err == f"placement at {url} is not reachable: connection refused\n"


def test_bad_resource_argument(moorage: Callable[..., Run]) -> None:
    run = moorage("placement", "candidates", "--resource", "VCPU=lots")
    assert run.code == 2
    assert "expected RESOURCE_CLASS=AMOUNT with a positive amount, got 'VCPU=lots'" in run.err


def test_url_and_token_from_the_environment(moorage: Callable[..., Run], cloud_url: str,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(placement_client.URL_ENV, cloud_url)
    run = moorage("placement", "provider", "list", "-f", "value", "-c", "name",
                  "--name", "kvm-pc-01")
    assert (run.code, run.out) == (0, "kvm-pc-01\n")
    monkeypatch.setenv(placement_client.TOKEN_ENV, "someone")
    run = moorage("placement", "provider", "list")
    assert run.code == 1 and "403 Forbidden" in run.err


# -- as a user runs it: a subprocess -------------------------------------------------------
def moorage_process(*argv: str, env: dict[str, str] | None = None,
                    **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "moorage", *argv], capture_output=True,
                          text=True, timeout=120, env={**os.environ, **(env or {})}, **kwargs)


def test_subprocess_list_and_error(cloud_url: str) -> None:
    done = moorage_process("placement", "provider", "list", "-f", "json", "-c", "name",
                           "-c", "usage", env={placement_client.URL_ENV: cloud_url})
    assert done.returncode == 0, done.stderr
    usage = {row["name"]: row["usage"] for row in json.loads(done.stdout)}
    assert usage["ceph-pool-01"] == {"DISK_GB": {"used": 120, "capacity": 100000}}

    done = moorage_process("placement", "provider", "show", sample.sample_uuid("nowhere"),
                           env={placement_client.URL_ENV: cloud_url})
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "404 Not Found: No resource provider with uuid" in done.stderr


# -- the demo -------------------------------------------------------------------------------
class DemoProcess:
    """``moorage placement demo`` as a subprocess, its output read line by line."""

    def __init__(self, *args: str, cwd: Path | None = None) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "moorage", "placement", "demo", *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def read_guide(self, timeout: float = 90.0) -> str:
        text = ""
        while "Press Ctrl-C" not in text:
            line = self.lines.get(timeout=timeout)
            if line is None:
                raise AssertionError(f"demo ended early:\n{text}\n{self.stderr()}")
            text += line
        return text

    def interrupt(self) -> tuple[int, str]:
        self.process.send_signal(signal.SIGINT)
        code = self.process.wait(timeout=60)
        rest = ""
        while (line := self.lines.get(timeout=10)) is not None:
            rest += line
        return code, rest

    def stderr(self) -> str:
        assert self.process.stderr is not None
        return self.process.stderr.read() if self.process.poll() is not None else ""

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def demo() -> Iterator[Callable[..., DemoProcess]]:
    started: list[DemoProcess] = []

    def start(*args: str, cwd: Path | None = None) -> DemoProcess:
        started.append(DemoProcess(*args, cwd=cwd))
        return started[-1]

    yield start
    for process in started:
        process.kill()


def expected_demo_hosts() -> set[str]:
    """Roots of the sample cloud with the e1000 NIC model and room for the demo's request
    on the root itself (true of every host with that trait)."""
    request = {orc.VCPU: 2, orc.MEMORY_MB: 4096, orc.DISK_GB: 20}
    return {s.name for s in CLOUD.providers
            if s.parent is None and ot.COMPUTE_NET_VIF_MODEL_E1000 in s.traits
            and all(fits(s, rc, n) for rc, n in request.items())}


def test_demo_prints_a_guide_answers_live_and_stops_on_ctrl_c(
        demo: Callable[..., DemoProcess], moorage: Callable[..., Run]) -> None:
    process = demo("--port", "0")
    guide = process.read_guide()
    url = re.search(r"running at (http://127\.0\.0\.1:\d+) ", guide)
    data = re.search(r"data and server log: (\S+) \(deleted on exit", guide)
    answer = re.search(r"answered live: (\d+) hosts? can take it: (.*)$", guide, re.MULTILINE)
    assert url and data and answer, guide
    assert "DEVELOPMENT noauth2" in guide
    assert "required=COMPUTE_NET_VIF_MODEL_E1000" in guide
    assert "X-Auth-Token: admin" in guide
    assert f"export {placement_client.URL_ENV}={url[1]}" in guide
    hosts = dict(re.findall(r"([\w-]+) \(([0-9a-f-]{36})\)", answer[2]))
    assert set(hosts) == expected_demo_hosts() == {"kvm-pc-01", "vmware-01"}
    assert int(answer[1]) == len(hosts)
    assert all(uuid == sample.sample_uuid(name) for name, uuid in hosts.items())
    assert "also with the trait, but without room: kvm-pc-02" in guide

    # The commands of the guide work against the demo's server.
    run = moorage("placement", "provider", "list", "-f", "value", "-c", "name",
                  "--os-placement-url", url[1])
    assert sorted(run.out.split()) == sorted(s.name for s in CLOUD.providers)
    assert Path(data[1]).is_dir()

    code, rest = process.interrupt()
    assert code == 0, process.stderr()
    assert "Placement stopped." in rest
    assert "Traceback" not in process.stderr()
    with pytest.raises(requests.ConnectionError):
        requests.get(url[1], timeout=5)
    assert not Path(data[1]).exists()


def test_demo_keeps_its_data_when_asked(demo: Callable[..., DemoProcess],
                                        tmp_path: Path) -> None:
    keep = tmp_path / "demo"
    first = demo("--port", "0", "--keep", "demo", cwd=tmp_path)  # relative to where it runs
    assert "with the sample cloud loaded" in first.read_guide()
    assert first.interrupt()[0] == 0
    assert (keep / "placement.sqlite").exists()

    again = demo("--port", "0", "--keep", str(keep))
    guide = again.read_guide()
    assert "with the sample cloud already there" in guide
    assert "2 hosts can take it" in guide
    assert again.interrupt()[0] == 0


def test_demo_interrupted_while_starting_leaves_no_server(
        demo: Callable[..., DemoProcess]) -> None:
    port = free_port()
    process = demo("--port", str(port))
    assert process.lines.get(timeout=60) == f"Starting placement on http://127.0.0.1:{port} ...\n"
    code, rest = process.interrupt()
    assert code == 0, process.stderr()
    assert rest.endswith("Stopping placement ...\nPlacement stopped.\n")
    with pytest.raises(requests.ConnectionError):
        requests.get(f"http://127.0.0.1:{port}/", timeout=5)


def test_demo_port_in_use(moorage: Callable[..., Run]) -> None:
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        run = moorage("placement", "demo", "--port", str(port))
    assert run.code == 1
    assert run.err == (f"port {port} on 127.0.0.1 is in use (another placement?); "
                       "choose another with --port, or --port 0 for any\n")
