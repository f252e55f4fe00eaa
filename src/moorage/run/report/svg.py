"""Horizontal bar charts as inline SVG, drawn in Python so the page needs no script.

One bar per configuration, each a ``rect.bar`` carrying its configuration and value, so a
test (or a reader of the page's source) can check what was drawn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

# A colour per configuration, the same in every chart (colour-blind safe, Okabe-Ito).
PALETTE = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#d55e00", "#56b4e9", "#f0e442",
           "#000000")

_LABEL_WIDTH = 180     # configuration names, right-aligned against the bars
_BAR_AREA = 240
_VALUE_WIDTH = 70      # the printed value after each bar
_ROW = 28
_BAR = 18
_PAD = 8
_MAX_LABEL = 26        # longer names are shortened; the full name is in the tooltip


@dataclass(frozen=True)
class Bar:
    label: str            # the configuration's name
    value: float | None   # None: not measured (drawn as an empty bar)
    text: str             # the value as printed
    colour: str


def bar_chart(key: str, title: str, bars: Sequence[Bar]) -> str:
    """An ``<svg data-chart=key>`` with one ``rect.bar`` per bar, scaled to the largest."""
    width = _LABEL_WIDTH + _BAR_AREA + _VALUE_WIDTH
    height = 2 * _PAD + _ROW * len(bars)
    largest = max((bar.value or 0.0 for bar in bars), default=0.0)
    parts = [
        f'<svg data-chart="{escape(key)}" role="img" '
        f'aria-label="{escape(title)}" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}">',
        f"<title>{escape(title)}</title>",
        f'<line class="axis" x1="{_LABEL_WIDTH}" y1="{_PAD - 2}" x2="{_LABEL_WIDTH}" '
        f'y2="{height - _PAD + 2}" stroke="#888" stroke-width="1"/>',
    ]
    for row, bar in enumerate(bars):
        top = _PAD + row * _ROW + (_ROW - _BAR) / 2
        middle = _PAD + row * _ROW + _ROW / 2
        length = 0.0 if not largest or bar.value is None else bar.value / largest * _BAR_AREA
        label = bar.label if len(bar.label) <= _MAX_LABEL else bar.label[:_MAX_LABEL - 1] + "…"
        parts += [
            f'<text class="label" x="{_LABEL_WIDTH - 6}" y="{middle:.1f}" text-anchor="end" '
            f'dominant-baseline="middle">{escape(label)}</text>',
            f'<rect class="bar" data-configuration="{escape(bar.label)}" '
            f'data-value="{escape(bar.text)}" x="{_LABEL_WIDTH}" y="{top:.1f}" '
            f'width="{length:.1f}" height="{_BAR}" fill="{bar.colour}">'
            f"<title>{escape(bar.label)}: {escape(bar.text)}</title></rect>",
            f'<text class="value" x="{_LABEL_WIDTH + length + 6:.1f}" y="{middle:.1f}" '
            f'dominant-baseline="middle">{escape(bar.text)}</text>',
        ]
    parts.append("</svg>")
    return "\n".join(parts)
