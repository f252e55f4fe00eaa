"""The terminal report: the configurations side by side, then what failed and why.

Plain text that fits ``WIDTH`` columns for five configurations; bold headings only when
asked for colour (by default: when standard output is a terminal and NO_COLOR is unset).
"""

from __future__ import annotations

import os
import re
import sys
import textwrap
from collections.abc import Callable

from moorage.run.report.figures import FIGURES, failures, host_groups, refused_at_spawn
from moorage.run.results import ConfigurationResult, RunResult

WIDTH = 100
GAP = 2            # spaces between columns
MIN_COLUMN = 6
_BOLD, _RESET = "\x1b[1m", "\x1b[0m"


def terminal_table(run: RunResult, *, colour: bool | None = None) -> str:
    """The whole terminal report of ``run``, ending with a newline."""
    if colour is None:
        colour = sys.stdout.isatty() and not os.environ.get("NO_COLOR")

    def heading(text: str) -> str:
        return f"{_BOLD}{text}{_RESET}" if colour else text

    title = f"Moorage run: cloud {run.cloud_name} ({run.cloud_file}), seed {run.seed}"
    lines = [heading(line) for line in _wrap(title)]
    lines += _wrap(_cloud_sentence(run))
    lines.append("")
    lines += comparison(run.configurations, bold=heading)
    lines += ["", heading("Configurations")]
    for result in run.configurations:
        lines += _wrap(f"{result.configuration.name}: {result.configuration.description}",
                       indent="  ", hanging="    ")
    lines += ["", heading("Failures by constraint (hosts each constraint excludes on its own)")]
    lines += _per_configuration(run, lambda r: [f.sentence() for f in failures(r)])
    lines += ["", heading("Refused at spawn (each a reschedule, or a failure on the last "
                          "host)")]
    lines += _per_configuration(
        run, lambda r: [refusal.sentence() for refusal in refused_at_spawn(run, r)])
    if run.notes:
        lines += ["", heading("Notes")]
        for note in run.notes:
            lines += _wrap(note, indent="  - ", hanging="    ")
    return "\n".join(lines) + "\n"


def _per_configuration(run: RunResult,
                       sentences: Callable[[ConfigurationResult], list[str]]) -> list[str]:
    """A section's lines: each configuration's sentences under its name, or "none"."""
    lines: list[str] = []
    for result in run.configurations:
        found = sentences(result)
        if not found:
            lines.append(f"  {result.configuration.name}: none")
            continue
        lines.append(f"  {result.configuration.name}")
        for sentence in found:
            lines += _wrap(sentence, indent="    ", hanging="      ")
    return lines


def comparison(results: list[ConfigurationResult], *,
               bold: Callable[[str], str] | None = None) -> list[str]:
    """The side-by-side table: a column per configuration, a row per figure."""
    label_width = max(len(figure.label) for figure in FIGURES)
    cells = [[figure.text(result) for result in results] for figure in FIGURES]
    widths = _column_widths([r.configuration.name for r in results], cells,
                            WIDTH - label_width)
    headers = [textwrap.wrap(r.configuration.name, width, break_on_hyphens=True) or [""]
               for r, width in zip(results, widths, strict=True)]
    depth = max((len(h) for h in headers), default=1)
    lines = []
    for row in range(depth):
        # Bottom-align the wrapped names so every name ends on the line above the rule.
        parts = [(h[row - depth + len(h)] if row >= depth - len(h) else "").rjust(width)
                 for h, width in zip(headers, widths, strict=True)]
        lines.append(_row("", parts, label_width))
    if bold is not None:
        lines = [bold(line) for line in lines]
    lines.append("-" * (label_width + sum(GAP + w for w in widths)))
    for figure, row_cells in zip(FIGURES, cells, strict=True):
        parts = [cell.rjust(width) for cell, width in zip(row_cells, widths, strict=True)]
        lines.append(_row(figure.label, parts, label_width))
    return lines


def _row(label: str, parts: list[str], label_width: int) -> str:
    return (label.ljust(label_width) + "".join(" " * GAP + part for part in parts)).rstrip()


def _column_widths(names: list[str], cells: list[list[str]], room: int) -> list[int]:
    """Each column as wide as its name on one line, then the widest narrowed until the
    table fits ``room``: names wrap, but never narrower than a value or a word of the name
    (unless nothing else fits; then long words break)."""
    floors, widths = [], []
    for column, name in enumerate(names):
        values = max((len(row[column]) for row in cells), default=0)
        words = max((len(word) for word in re.split(r"(?<=-)|\s+", name)), default=0)
        floors.append(max(MIN_COLUMN, values, words))
        widths.append(max(floors[-1], len(name)))
    while sum(GAP + w for w in widths) > room:
        narrowable = [c for c, w in enumerate(widths) if w > floors[c]]
        if not narrowable:
            narrowable = [c for c, w in enumerate(widths) if w > MIN_COLUMN]
            if not narrowable:
                break
        widest = max(narrowable, key=lambda c: widths[c])
        widths[widest] -= 1
    return widths


def _cloud_sentence(run: RunResult) -> str:
    groups = "; ".join(f"{group.name}: {len(group.hosts)} {group.driver} ({group.how})"
                       for group in host_groups(run))
    return (f"{len(run.hosts)} hosts ({groups or 'none'}); "
            f"{len(run.workload)} boots per configuration.")


def _wrap(text: str, indent: str = "", hanging: str | None = None) -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=indent,
                         subsequent_indent=indent if hanging is None else hanging,
                         break_on_hyphens=False) or [indent.rstrip()]
