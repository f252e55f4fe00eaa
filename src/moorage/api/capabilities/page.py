"""The capability catalogue as one self-contained HTML page, rendered by the server.

Why server-rendered: the compute API authenticates by the X-Auth-Token header, which a
page's own script would have to be given somehow (a cookie or a query string would
leak it to logs, history and other pages). Rendered on the server, the page is an
answer to the same authenticated GET as the JSON, chosen by the Accept header, and
carries no script at all. Every text is escaped; the Content-Security-Policy lets the
page load nothing and run nothing, and allows its one inline style by hash.
"""

from __future__ import annotations

import base64
import hashlib
from html import escape

from moorage.api.capabilities.catalogue import (
    Availability,
    Catalogue,
    CheckedBy,
    FamilyEntry,
    PropertyEntry,
)
from moorage.api.capabilities.census import RESOURCES

STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 60em;
       padding: 0 1em; color: #1d2430; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 2em; }
table { border-collapse: collapse; width: 100%; margin: .5em 0 1em; }
th, td { text-align: left; padding: .3em .6em; border-bottom: 1px solid #dde2ea; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
code { font-size: .9em; color: #33415c; }
.none { color: #6b7689; }
"""
STYLE_HASH = "sha256-" + base64.b64encode(hashlib.sha256(STYLE.encode()).digest()).decode()
CONTENT_SECURITY_POLICY = (f"default-src 'none'; style-src '{STYLE_HASH}'; "
                           "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
UNITS = {"VCPU": "vCPUs", "MEMORY_MB": "MB memory", "DISK_GB": "GB disk"}


def _family(entry: FamilyEntry) -> str:
    title = f'<h3 id="family-{escape(entry.key)}">{escape(entry.title)}</h3>'
    if not entry.traits:
        return title + '<p class="none">None offered.</p>'
    head = "".join(f"<th>free {escape(UNITS[rc])}</th>" for rc in RESOURCES)
    rows = "".join(
        f'<tr data-trait="{escape(t.trait)}"><td>{escape(t.label)}</td>'
        f"<td><code>{escape(t.trait)}</code></td><td class=\"n\">{t.hosts}</td>"
        + "".join(f'<td class="n">&ge;&nbsp;{t.free[rc]}</td>' for rc in RESOURCES) + "</tr>"
        for t in entry.traits)
    return (f"{title}<table><tr><th>capability</th><th>trait</th><th>hosts</th>{head}</tr>"
            f"{rows}</table>")


def _values(values: list[str]) -> str:
    return ", ".join(f"<code>{escape(v)}</code>" for v in values)


def _property(entry: PropertyEntry) -> str:
    checked = ("placement asks only hosts that have it" if entry.checked_by
               is CheckedBy.PLACEMENT else "the host checks it when the server starts")
    parts = [f'<h3 id="property-{escape(entry.property)}"><code>{escape(entry.property)}'
             f"</code></h3><p>Checked: {escape(checked)}.</p>"]
    offered = [v for v in entry.values if v.availability is Availability.OFFERED]
    if offered:
        parts.append("<table><tr><th>value</th><th>requires</th><th>hosts</th></tr>" + "".join(
            f"<tr><td><code>{escape(entry.property)}={escape(v.value)}</code></td>"
            f"<td><code>{escape(v.trait or '')}</code></td><td class=\"n\">{v.hosts}</td></tr>"
            for v in offered) + "</table>")
    missing = [v.value for v in entry.values if v.availability is Availability.NOT_OFFERED]
    if missing:
        parts.append(f'<p class="none">Not offered: {_values(missing)}.</p>')
    untranslated = [v.value for v in entry.values if v.availability is Availability.NO_TRAIT]
    if untranslated:
        parts.append(f'<p class="none">No standard trait (not checked when scheduling): '
                     f"{_values(untranslated)}.</p>")
    return "".join(parts)


def render(catalogue: Catalogue) -> str:
    """The whole page."""
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Capabilities of this cloud</title><style>{STYLE}</style></head><body>"
        "<h1>Capabilities of this cloud</h1>"
        "<p>What the hosts of this cloud offer, as standard "
        "os-traits names. An image that needs one can say so with the image "
        "property <code>trait:NAME=required</code>, or with the properties below. "
        f"Only capabilities that at least {catalogue.floor} hosts offer are listed; "
        "free capacity is summed over the hosts that offer each one, now, and rounded "
        "down to 1, 2 or 5 times a power of ten (at least that much is free).</p>"
        "<h2>Capabilities</h2>"
        + "".join(_family(f) for f in catalogue.families)
        + "<h2>Image properties and what they require</h2>"
        + "".join(_property(p) for p in catalogue.properties)
        + "</body></html>")
