"""Running the ``moorage`` command in the test process, as a user would run it."""

from __future__ import annotations

import json
import logging
import sys
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


# The request lines of the services a test runs in this process (the compute API in a
# thread): the command's console would print them, which a user's, talking to a
# service in another process, never does.
SERVICE_REQUEST_LOGS = ("moorage.api.requests", "moorage.image.requests",
                        "moorage.placement.requests",
                        "moorage.compute.requests")


def run_moorage(capsys: pytest.CaptureFixture[str], argv: Sequence[str]) -> Run:
    """``moorage ARGV``: its exit status (argparse's included) and output. The logging
    set-up the command makes (cliff configures the root logger) is undone after it."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    quiet = [logging.getLogger(name) for name in SERVICE_REQUEST_LOGS]
    levels = [logger.level for logger in quiet]
    for logger in quiet:
        logger.setLevel(logging.WARNING)
    try:
        code = main(list(argv))
    except SystemExit as exc:
        if isinstance(exc.code, str):  # Python prints it and exits 1
            sys.stderr.write(exc.code + "\n")
            code = 1
        else:
            code = int(exc.code or 0)
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
        for logger, before in zip(quiet, levels, strict=True):
            logger.setLevel(before)
    captured = capsys.readouterr()
    return Run(code, captured.out, captured.err)
