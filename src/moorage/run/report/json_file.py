"""``--json FILE``: the run for machines, ``RunResult.to_json()`` pretty-printed."""

from __future__ import annotations

import json
import os

from moorage.run.results import RunResult


def write_json(run: RunResult, path: str | os.PathLike[str]) -> None:
    """Write ``run`` as indented UTF-8 JSON, one entry per configuration."""
    text = json.dumps(run.to_json(), indent=2, ensure_ascii=False)
    with open(path, "w", encoding="utf-8") as out:
        out.write(text + "\n")
