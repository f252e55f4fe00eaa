"""Running the ``moorage`` command in the test process, as a user would run it."""

from __future__ import annotations

import json
import logging
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from unittest import mock

import pytest

from moorage.cli.main import MoorageApp, main


@dataclass(frozen=True)
class Run:
    """What one command did: its exit status and what it printed."""

    code: int
    out: str
    err: str

    def json(self) -> Any:
        """What a ``-f json`` command printed, decoded."""
        return json.loads(self.out)


class _CommandThreadOnly(logging.Filter):
    """Lets through only what the command's own thread logs. The services a test runs
    in this process (the compute API, its conductor, the fleet) log from their own
    threads; a user's console, talking to services in other processes, never shows
    their lines, and their timing would make the command's output racy."""

    def __init__(self) -> None:
        super().__init__()
        self.thread = threading.get_ident()

    def filter(self, record: logging.LogRecord) -> bool:
        return record.thread == self.thread


def run_moorage(capsys: pytest.CaptureFixture[str], argv: Sequence[str]) -> Run:
    """``moorage ARGV``: its exit status (argparse's included) and output. The logging
    set-up the command makes (cliff configures the root logger) is undone after it."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    own_thread = _CommandThreadOnly()
    configure = MoorageApp.configure_logging

    def configure_console(app: MoorageApp) -> None:
        configure(app)
        for handler in root.handlers:
            if handler not in handlers:
                handler.addFilter(own_thread)

    try:
        with mock.patch.object(MoorageApp, "configure_logging", configure_console):
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
    captured = capsys.readouterr()
    return Run(code, captured.out, captured.err)
