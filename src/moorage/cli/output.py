"""What a command hands cliff to print: a table (column names, then one row per item) or
one record (field names, then their values). cliff renders either as a table, JSON,
YAML, CSV or shell variables; a value that needs formatting is a ``FormattableColumn``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

# A Lister's answer.
Table = tuple[Sequence[str], Iterable[Sequence[object]]]
# A ShowOne's answer.
Fields = tuple[Sequence[str], Sequence[object]]
