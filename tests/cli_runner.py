"""Running the ``moorage`` command in the test process, as a user would run it."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from moorage.cli.main import main


@dataclass(frozen=True)
class Run:
    """What one command did: its exit status and what it printed."""

    code: int
    out: str
    err: str

    def json(self) -> Any:
        """What a ``-f json`` command printed, decoded."""
        return json.loads(self.out)


def run_moorage(capsys: pytest.CaptureFixture[str], argv: Sequence[str]) -> Run:
    """``moorage ARGV``: its exit status (argparse's included) and output. The logging
    set-up the command makes (cliff configures the root logger) is undone after it."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    captured = capsys.readouterr()
    return Run(code, captured.out, captured.err)
