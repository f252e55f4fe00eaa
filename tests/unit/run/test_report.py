"""The reports of ``moorage run`` read from a hand-built RunResult: the terminal table's
figures, alignment, width and failure lines; the JSON round trip; the HTML's escaping."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import lxml.html
import pytest

from moorage.run.report import terminal_table, write_html, write_json
from moorage.run.report.html_page import html_report
from moorage.run.results import (
    BootResult,
    Configuration,
    ConfigurationResult,
    Exclusion,
    Refusal,
    RunResult,
)

E1000 = "required trait COMPUTE_NET_VIF_MODEL_E1000 (hw_vif_model=e1000)"
UEFI = "required trait COMPUTE_SECURITY_UEFI_SECURE_BOOT (os_secure_boot=required)"
IDE = "COMPUTE_STORAGE_BUS_IDE"


def boot(index: int, *, attempts: int = 1, candidates: int | None = 10,
         ms: float | None = 5.0, fault: str | None = None,
         exclusions: tuple[Exclusion, ...] = ()) -> BootResult:
    return BootResult(index=index, image="cirros", flavor="m1.small",
                      status="ERROR" if fault else "ACTIVE",
                      host=None if fault else "kvm-0", spawn_attempts=attempts,
                      candidates=candidates,
                      scheduling_seconds=None if ms is None else ms / 1000,
                      fault=fault, exclusions=exclusions)


def no_host(index: int, constraint: str, excluded: int = 9) -> BootResult:
    return boot(index, attempts=0, candidates=None, fault="NoValidHost",
                exclusions=(Exclusion(constraint, excluded, 12),))


# Prefilters off: 4 boots, one rescheduled twice, one failing late checks for good.
OFF = ConfigurationResult(Configuration("prefilters off", "no request filter"), [
    boot(0, candidates=12, ms=4.0),
    boot(1, attempts=3, candidates=12, ms=6.0),
    boot(2, candidates=11, ms=5.0),
    boot(3, attempts=3, candidates=12, ms=9.0, fault="MaxRetriesExceeded"),
], wall_seconds=1.25)
# Both prefilters: the e1000 boots become NoValidHost, named by their constraint.
BOTH = ConfigurationResult(Configuration("both prefilters", "image type and metadata"), [
    boot(0, candidates=3, ms=2.0),
    no_host(1, E1000),
    no_host(2, E1000, excluded=8),
    no_host(3, E1000),
    no_host(4, E1000),
    no_host(5, E1000),
    no_host(6, E1000),
    no_host(7, UEFI, excluded=11),
], wall_seconds=0.5)
EMPTY = ConfigurationResult(Configuration("nothing played", "no boot reached a scheduler"))


def run_of(*results: ConfigurationResult, notes: tuple[str, ...] = ()) -> RunResult:
    hosts = [{"name": f"kvm-{i}", "group": "kvm", "driver": "libvirt", "real": i < 2}
             for i in range(4)]
    hosts += [{"name": "vc-0", "group": "vmware", "driver": "vmware", "real": False}]
    return RunResult(cloud_name="example", cloud_file="cloud.yaml", seed=7, hosts=hosts,
                     workload=[{"index": 0, "image": "cirros", "flavor": "m1.small"}],
                     configurations=list(results), notes=list(notes))


def table_rows(report: str) -> dict[str, list[str]]:
    """The comparison's rows, label -> cells, read back from the printed table."""
    lines = report.splitlines()
    start = next(i for i, line in enumerate(lines) if set(line) == {"-"}) + 1
    end = lines.index("", start)
    return {re.split(r"\s{2,}", line.strip())[0]: re.split(r"\s{2,}", line.strip())[1:]
            for line in lines[start:end]}


@pytest.mark.parametrize(("label", "cells"), [
    ("boots", ["4", "8", "0"]),
    ("ACTIVE", ["3", "1", "0"]),
    ("NoValidHost", ["1", "7", "0"]),  # MaxRetriesExceeded is a NoValidHost
    ("of which MaxRetriesExceeded", ["1", "0", "0"]),
    ("other errors", ["0", "0", "0"]),
    ("spawn attempts", ["8", "1", "0"]),
    ("reschedules", ["4", "0", "0"]),
    ("candidates per request (mean)", ["11.8", "3.0", "-"]),
    ("scheduling latency p50 ms", ["5.0", "5.0", "-"]),
    ("scheduling latency p95 ms", ["9.0", "5.0", "-"]),
    ("wall time s", ["1.2", "0.5", "0.0"]),
])
def test_table_rows_carry_each_configurations_figures(label: str, cells: list[str]) -> None:
    assert table_rows(terminal_table(run_of(OFF, BOTH, EMPTY), colour=False))[label] == cells


def test_columns_are_right_aligned_under_their_names() -> None:
    report = terminal_table(run_of(OFF, BOTH, EMPTY), colour=False)
    lines = report.splitlines()
    rule = next(i for i, line in enumerate(lines) if set(line) == {"-"})
    header, rows = lines[rule - 1], lines[rule + 1:lines.index("", rule)]
    names = ["prefilters off", "both prefilters", "nothing played"]
    # Each value ends in the column where its configuration's name ends; the last
    # column ends where the rule ends.
    ends = [header.index(name) + len(name) for name in names]
    assert ends[-1] == len(lines[rule])
    for row in rows:
        assert [m.end() for m in re.finditer(r"\S+", row)][-3:] == ends, row


def test_five_configurations_with_long_names_fit_100_columns() -> None:
    names = ["prefilters off", "image-type filter", "image-metadata filter",
             "both prefilters", "ImagePropertiesFilter (legacy)"]
    results = [ConfigurationResult(Configuration(name, "a description " * 12), OFF.boots)
               for name in names]
    report = terminal_table(run_of(*results, notes=("a long note " * 20,)), colour=False)
    assert max(len(line) for line in report.splitlines()) <= 100
    assert table_rows(report)["spawn attempts"] == ["8"] * 5


def test_failures_name_the_constraint_and_the_hosts_it_excluded() -> None:
    report = terminal_table(run_of(OFF, BOTH), colour=False)
    failures = report[report.index("Failures by constraint"):].splitlines()
    assert failures[1:7] == [
        "  prefilters off",
        "    MaxRetriesExceeded (no constraint recorded): 1 boot",
        "  both prefilters",
        f"    {E1000}: 6 boots, excluded 9 of 12 hosts",
        # Wrapped at 100 columns, under a hanging indent.
        f"    {UEFI}: 1 boot, excluded 11",
        "      of 12 hosts",
    ]


def test_refusals_at_spawn_are_counted_by_group_with_how_it_ran() -> None:
    refused = ConfigurationResult(Configuration("prefilters off", "no request filter"), [
        replace(boot(0, attempts=3), refusals=(Refusal("kvm-0", IDE), Refusal("kvm-1", IDE))),
        replace(boot(1, attempts=2), refusals=(Refusal("kvm-1", IDE),)),
        replace(boot(2, attempts=2), refusals=(Refusal("vc-0", "hw_vif_model=e1000"),)),
    ])
    run = run_of(refused, BOTH)
    report = terminal_table(run, colour=False)
    section = report[report.index("Refused at spawn"):].splitlines()
    assert section[1:5] == [
        "  prefilters off",
        f"    {IDE}: 3 builds on kvm (2 of 4 hosts; libvirt, 2 on real QEMU, 2 from "
        "recorded",
        "      capabilities)",
        "    hw_vif_model=e1000: 1 build on vmware (1 of 1 hosts; vmware, simulated, in "
        "process)",
    ]
    assert section[5] == "  both prefilters: none"
    assert refused.summary()["refused_at_spawn"] == [
        {"host": "kvm-1", "feature": IDE, "builds": 2},
        {"host": "kvm-0", "feature": IDE, "builds": 1},
        {"host": "vc-0", "feature": "hw_vif_model=e1000", "builds": 1}]
    cells = [[td.text_content() for td in tr.findall("td")] for tr in
             lxml.html.fromstring(html_report(run)).xpath("//table[@class='refusals']/tr")]
    assert cells[1][1:] == [IDE, "3", "kvm", "kvm-0, kvm-1",
                            "libvirt, 2 on real QEMU, 2 from recorded capabilities"]


def test_a_configuration_without_failures_says_none() -> None:
    clean = ConfigurationResult(Configuration("clean", "nothing fails"), [boot(0)])
    assert "  clean: none" in terminal_table(run_of(clean), colour=False).splitlines()


def test_notes_and_the_cloud_are_reported() -> None:
    report = terminal_table(run_of(OFF, notes=("kvm-2, kvm-3 from recorded capabilities",)),
                            colour=False)
    assert "  - kvm-2, kvm-3 from recorded capabilities" in report.splitlines()
    cloud = " ".join(report.split())
    assert "kvm: 4 libvirt (2 on real QEMU, 2 from recorded capabilities)" in cloud
    assert "vmware: 1 vmware (simulated, in process)" in cloud


def test_colour_only_when_asked_or_on_a_terminal() -> None:
    run = run_of(OFF, BOTH)
    assert "\x1b[" not in terminal_table(run, colour=False)
    assert "\x1b[" not in terminal_table(run)   # pytest captures stdout: not a tty
    coloured = terminal_table(run, colour=True)
    assert "\x1b[1mFailures by constraint" in coloured
    assert re.sub(r"\x1b\[\d+m", "", coloured) == terminal_table(run, colour=False)


def test_json_round_trips_run_to_json(tmp_path: Path) -> None:
    run = run_of(OFF, BOTH, EMPTY, notes=("ünïcode note",))
    path = tmp_path / "run.json"
    write_json(run, path)
    text = path.read_text(encoding="utf-8")
    assert json.loads(text) == json.loads(json.dumps(run.to_json()))
    assert text.startswith('{\n  "cloud": "example"') and text.endswith("}\n")
    assert "ünïcode note" in text
    both = json.loads(text)["configurations"][1]
    assert (both["no_valid_host"], both["reschedules"], both["failures"][0]) == (
        7, 0, {"constraint": E1000, "boots": 6, "hosts_excluded": 9})


def test_html_has_a_bar_per_configuration_in_every_chart(tmp_path: Path) -> None:
    run = run_of(OFF, BOTH, EMPTY)
    path = tmp_path / "report.html"
    write_html(run, path)
    page = lxml.html.fromstring(path.read_text(encoding="utf-8"))
    charts = page.xpath("//svg[@data-chart]")
    assert len(charts) == 6
    for chart in charts:
        assert [bar.get("data-configuration") for bar in chart.xpath(".//rect[@class='bar']")
                ] == ["prefilters off", "both prefilters", "nothing played"]
    widths = {bar.get("data-configuration"): float(bar.get("width"))
              for bar in page.xpath("//svg[@data-chart='no-valid-host']//rect")}
    assert widths["both prefilters"] > widths["prefilters off"] > 0 == widths["nothing played"]


def test_html_escapes_text_and_loads_nothing() -> None:
    hostile = ConfigurationResult(
        Configuration('<script>alert("x")</script>', "a & b"),
        [no_host(0, "required trait CUSTOM_<B> (hw_x=\"y\")")])
    page = html_report(run_of(hostile, notes=("<img src=x>",)))
    assert "<script>alert" not in page and "<img" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert "CUSTOM_&lt;B&gt;" in page and "a &amp; b" in page
    assert "http" not in page
    assert not lxml.html.fromstring(page).xpath("//*[@src or @href]")
