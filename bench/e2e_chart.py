"""Latency against the number of hosts, from bench/e2e.py's JSON files: an SVG chart.

Two panels share the x axis (hosts, logarithmic): the scheduler's own time per
decision (p50 and p95) and a server's create-to-ACTIVE time (p50), one line per
database and number of API processes.

    .venv/bin/python bench/e2e_chart.py bench/results/e2e-sqlite.json \\
        bench/results/e2e-postgresql.json -o docs/images/e2e-latency.svg
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable, Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

WIDTH, PANEL_HEIGHT = 720, 250
LEFT, RIGHT, TOP, GAP, BOTTOM = 70, 200, 40, 70, 50
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]

Row = Mapping[str, Any]


def series(rows: Sequence[Row]) -> dict[str, list[Row]]:
    """Rows by line: database and API processes, each sorted by hosts."""
    lines: dict[str, list[Row]] = {}
    for row in rows:
        label = (f"{row['database']}, {row['api_workers']} API "
                 f"process{'es' if row['api_workers'] > 1 else ''}")
        lines.setdefault(label, []).append(row)
    return {label: sorted(found, key=lambda r: r["hosts"]) for label, found in lines.items()}


def _nice_ceiling(value: float) -> float:
    if value <= 0:
        return 1.0
    step = 10.0 ** math.floor(math.log10(value))
    for factor in (1.0, 2.0, 2.5, 5.0, 10.0):
        if value <= factor * step:
            return factor * step
    return 10.0 * step


def panel(lines: Mapping[str, Sequence[Row]], hosts: Sequence[int], top: float,
          title: str, measures: Sequence[tuple[str, Callable[[Row], float], str]]) -> str:
    """One panel: every line under each measure (solid, dashed...)."""
    plot_width = WIDTH - LEFT - RIGHT
    low, high = math.log10(min(hosts)), math.log10(max(hosts))
    span = (high - low) or 1.0
    peak = _nice_ceiling(max(get(r) for rows in lines.values() for r in rows
                             for _, get, _ in measures))

    def x(h: float) -> float:
        return LEFT + (math.log10(h) - low) / span * plot_width

    def y(v: float) -> float:
        return top + PANEL_HEIGHT - v / peak * PANEL_HEIGHT

    out = [f'<text x="{LEFT}" y="{top - 12}" font-weight="bold">{escape(title)}</text>']
    for tick in range(5):
        value = peak * tick / 4
        out.append(f'<line x1="{LEFT}" x2="{LEFT + plot_width}" y1="{y(value):.1f}" '
                   f'y2="{y(value):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{LEFT - 8}" y="{y(value) + 4:.1f}" text-anchor="end">'
                   f'{value:g}</text>')
    for h in hosts:
        out.append(f'<line x1="{x(h):.1f}" x2="{x(h):.1f}" y1="{top}" '
                   f'y2="{top + PANEL_HEIGHT}" stroke="#eee"/>')
        out.append(f'<text x="{x(h):.1f}" y="{top + PANEL_HEIGHT + 16}" '
                   f'text-anchor="middle">{h:,}</text>')
    out.append(f'<text x="18" y="{top + PANEL_HEIGHT / 2:.0f}" text-anchor="middle" '
               f'transform="rotate(-90 18 {top + PANEL_HEIGHT / 2:.0f})">ms</text>')
    legend_y = top + 10
    for number, (label, rows) in enumerate(lines.items()):
        colour = COLOURS[number % len(COLOURS)]
        for name, get, dash in measures:
            points = " ".join(f"{x(r['hosts']):.1f},{y(get(r)):.1f}" for r in rows)
            out.append(f'<polyline points="{points}" fill="none" stroke="{colour}" '
                       f'stroke-width="2" stroke-dasharray="{dash}" '
                       f'data-series="{escape(label)}" data-measure="{name}"/>')
            out.extend(f'<circle cx="{x(r["hosts"]):.1f}" cy="{y(get(r)):.1f}" r="3" '
                       f'fill="{colour}"><title>{escape(label)}, {r["hosts"]:,} hosts, '
                       f'{name}: {get(r):.1f} ms</title></circle>' for r in rows)
        out.append(f'<rect x="{WIDTH - RIGHT + 15}" y="{legend_y - 9}" width="12" '
                   f'height="12" fill="{colour}"/>')
        out.append(f'<text x="{WIDTH - RIGHT + 32}" y="{legend_y + 2}">{escape(label)}'
                   '</text>')
        legend_y += 18
    for name, _, dash in measures:
        out.append(f'<line x1="{WIDTH - RIGHT + 15}" x2="{WIDTH - RIGHT + 40}" '
                   f'y1="{legend_y:.0f}" y2="{legend_y:.0f}" stroke="#333" '
                   f'stroke-width="2" stroke-dasharray="{dash}"/>')
        out.append(f'<text x="{WIDTH - RIGHT + 46}" y="{legend_y + 4:.0f}">{name}</text>')
        legend_y += 18
    return "\n".join(out)


def chart(rows: Sequence[Row]) -> str:
    lines = series(rows)
    hosts = sorted({int(r["hosts"]) for r in rows})
    height = TOP + 2 * PANEL_HEIGHT + GAP + BOTTOM
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{height}" fill="white"/>',
        panel(lines, hosts, TOP, "Scheduling (select_destinations and claim) per boot",
              [("p50", lambda r: r["scheduling_p50_ms"], ""),
               ("p95", lambda r: r["scheduling_p95_ms"], "6 4")]),
        panel(lines, hosts, TOP + PANEL_HEIGHT + GAP,
              "Create to ACTIVE per boot (16 clients)",
              [("p50", lambda r: r["latency_p50_ms"], "")]),
        f'<text x="{LEFT + (WIDTH - LEFT - RIGHT) / 2:.0f}" y="{height - 10}" '
        f'text-anchor="middle">hosts (logarithmic)</text>',
        "</svg>",
    ]
    return "\n".join(parts) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", type=Path, help="bench/e2e.py --json files")
    parser.add_argument("-o", "--output", type=Path, required=True, help="the SVG to write")
    args = parser.parse_args(argv)
    rows: list[Row] = []
    for path in args.results:
        rows.extend(json.loads(path.read_text()))
    if not rows:
        parser.error("the result files hold no run")
    args.output.write_text(chart(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
