"""``--html FILE``: one self-contained page (inline CSS and SVG, no external URL) showing
the cloud, the comparison, a chart per key figure and each configuration's failures.

The charts are SVG drawn here, so the page reads without JavaScript; a three-line script
only marks the body once the browser has laid it out (``data-rendered="yes"``, with the
number of charts and of bars it drew), which is what the browser test looks for.
"""

from __future__ import annotations

import os
from html import escape

from moorage.run.report.figures import (
    CHARTED,
    FIGURES,
    failures,
    host_groups,
    refused_at_spawn,
)
from moorage.run.report.svg import PALETTE, Bar, bar_chart
from moorage.run.results import ConfigurationResult, RunResult

_STYLE = """
body { font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; margin: 2em auto;
       max-width: 1100px; color: #222; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.25em; margin-top: 1.8em; border-bottom: 1px solid #ddd; }
p.meta { color: #555; margin-top: 0; }
table { border-collapse: collapse; margin: 0.6em 0; }
th, td { border: 1px solid #ddd; padding: 0.3em 0.7em; vertical-align: top; }
th { background: #f4f4f4; text-align: left; }
th:first-child, td:first-child { white-space: nowrap; }
td.number { text-align: right; font-variant-numeric: tabular-nums; }
.swatch { display: inline-block; width: 0.8em; height: 0.8em; margin-right: 0.4em; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(500px, 1fr));
          gap: 1em; }
figure { margin: 0; }
figcaption { font-weight: bold; margin-bottom: 0.3em; }
svg text { font-size: 12px; fill: #222; }
ul.notes li { margin: 0.2em 0; }
"""

# Marks the page as laid out by a browser: a bar counts as drawn when it has a box.
_SCRIPT = """
window.addEventListener("load", function () {
  var bars = document.querySelectorAll("svg[data-chart] rect.bar");
  var drawn = Array.prototype.filter.call(bars, function (bar) {
    return bar.getBoundingClientRect().height > 0;
  });
  document.body.dataset.charts = document.querySelectorAll("svg[data-chart]").length;
  document.body.dataset.barsDrawn = drawn.length;
  document.body.dataset.rendered = "yes";
});
"""


def write_html(run: RunResult, path: str | os.PathLike[str]) -> None:
    """Write the HTML report of ``run`` to ``path`` (UTF-8)."""
    with open(path, "w", encoding="utf-8") as out:
        out.write(html_report(run))


def html_report(run: RunResult) -> str:
    """The page as a string; every text from the run is escaped."""
    title = f"Moorage run: {run.cloud_name}"
    sections = [
        f"<h1>{escape(title)}</h1>",
        f'<p class="meta">Cloud file {escape(run.cloud_file)} · seed {run.seed} · '
        f"{len(run.hosts)} hosts · {len(run.workload)} boots per configuration"
        f"{_machine(run)}</p>",
        "<h2>The cloud</h2>", _cloud_table(run),
        "<h2>Configurations compared</h2>", _comparison_table(run.configurations),
        _configurations_table(run.configurations),
        "<h2>Charts</h2>", _charts(run.configurations),
        "<h2>Failures by constraint</h2>", _FAILURES_INTRO, _failures_table(run.configurations),
        "<h2>Refused at spawn</h2>", _REFUSALS_INTRO, _refusals_table(run),
    ]
    if run.notes:
        sections += ["<h2>Notes</h2>", '<ul class="notes">',
                     *(f"<li>{escape(note)}</li>" for note in run.notes), "</ul>"]
    body = "\n".join(sections)
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f"<title>{escape(title)}</title>\n<style>{_STYLE}</style>\n</head>\n"
            f"<body>\n{body}\n<script>{_SCRIPT}</script>\n</body>\n</html>\n")


def _colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def _swatch(index: int) -> str:
    return f'<span class="swatch" style="background:{_colour(index)}"></span>'


def _machine(run: RunResult) -> str:
    if not run.machine:
        return ""
    described = ", ".join(f"{key} {value}" for key, value in run.machine.items())
    return f" · machine: {escape(described)}"


def _cloud_table(run: RunResult) -> str:
    rows = ["<table>", "<tr><th>group</th><th>driver</th><th>hosts</th><th>ran as</th>"
                       "<th>shared attributes</th><th>host names</th></tr>"]
    for group in host_groups(run):
        details = ", ".join(f"{key}={value}" for key, value in group.details)
        rows.append(
            f"<tr><td>{escape(group.name)}</td><td>{escape(group.driver)}</td>"
            f'<td class="number">{len(group.hosts)}</td><td>{escape(group.how)}</td>'
            f"<td>{escape(details)}</td><td>{escape(', '.join(group.hosts))}</td></tr>")
    rows.append("</table>")
    return "\n".join(rows)


def _configuration_header(results: list[ConfigurationResult]) -> str:
    return "".join(
        f'<th title="{escape(result.configuration.description)}">'
        f"{_swatch(index)}{escape(result.configuration.name)}</th>"
        for index, result in enumerate(results))


def _comparison_table(results: list[ConfigurationResult]) -> str:
    rows = ["<table>", f"<tr><th></th>{_configuration_header(results)}</tr>"]
    for figure in FIGURES:
        cells = "".join(f'<td class="number">{escape(figure.text(result))}</td>'
                        for result in results)
        rows.append(f"<tr><th>{escape(figure.label)}</th>{cells}</tr>")
    rows.append("</table>")
    return "\n".join(rows)


def _configurations_table(results: list[ConfigurationResult]) -> str:
    rows = ["<table>", "<tr><th>configuration</th><th>what it does</th>"
                       "<th>options set</th></tr>"]
    for index, result in enumerate(results):
        options = "<br>".join(escape(f"[{group}] {option} = {value}")
                              for group, option, value in result.configuration.options)
        rows.append(f"<tr><td>{_swatch(index)}{escape(result.configuration.name)}</td>"
                    f"<td>{escape(result.configuration.description)}</td>"
                    f"<td>{options or 'none'}</td></tr>")
    rows.append("</table>")
    return "\n".join(rows)


def _charts(results: list[ConfigurationResult]) -> str:
    figures = []
    for figure in CHARTED:
        assert figure.chart is not None
        bars = [Bar(result.configuration.name, figure.value(result), figure.text(result),
                    _colour(index))
                for index, result in enumerate(results)]
        figures.append(f"<figure><figcaption>{escape(figure.chart_title)}</figcaption>\n"
                       f"{bar_chart(figure.chart, figure.chart_title, bars)}</figure>")
    return '<div class="charts">\n' + "\n".join(figures) + "\n</div>"


_FAILURES_INTRO = ("<p>For each failed boot, every constraint of its request that excludes "
                   "hosts, and how many of the cloud's hosts it excludes on its own.</p>")


_REFUSALS_INTRO = ("<p>Builds a host refused when it spawned them (its late check, or "
                   "the hypervisor), each then tried on an alternate or failed: what "
                   "placement let through. Libvirt hosts that ran on real QEMU refused "
                   "from what their QEMU and libvirt really offer.</p>")


def _refusals_table(run: RunResult) -> str:
    rows = ['<table class="refusals">',
            "<tr><th>configuration</th><th>feature</th><th>builds</th><th>group</th>"
            "<th>hosts</th><th>ran as</th></tr>"]
    for index, result in enumerate(run.configurations):
        name = f"{_swatch(index)}{escape(result.configuration.name)}"
        refused = refused_at_spawn(run, result)
        if not refused:
            rows.append(f'<tr><td>{name}</td><td colspan="5">none</td></tr>')
        for refusal in refused:
            rows.append(
                f"<tr><td>{name}</td><td>{escape(refusal.feature)}</td>"
                f'<td class="number">{refusal.builds}</td>'
                f"<td>{escape(refusal.group.name)}</td>"
                f"<td>{escape(', '.join(refusal.hosts))}</td>"
                f"<td>{escape(refusal.group.driver)}, {escape(refusal.group.how)}</td></tr>")
    rows.append("</table>")
    return "\n".join(rows)


def _failures_table(results: list[ConfigurationResult]) -> str:
    rows = ['<table class="failures">',
            "<tr><th>configuration</th><th>constraint or fault</th><th>boots</th>"
            "<th>hosts excluded</th></tr>"]
    for index, result in enumerate(results):
        name = f"{_swatch(index)}{escape(result.configuration.name)}"
        found = failures(result)
        if not found:
            rows.append(f'<tr><td>{name}</td><td colspan="3">none</td></tr>')
        for failure in found:
            excluded = ("" if failure.hosts_excluded is None else
                        f"{failure.hosts_excluded}" + ("" if failure.hosts_total is None
                                                       else f" of {failure.hosts_total}"))
            rows.append(f"<tr><td>{name}</td><td>{escape(failure.reason)}</td>"
                        f'<td class="number">{failure.boots}</td>'
                        f'<td class="number">{escape(excluded)}</td></tr>')
    rows.append("</table>")
    return "\n".join(rows)
