"""The moorage command's table of commands, which imports each command's module only
when that command runs."""

from __future__ import annotations

import importlib
import subprocess
import sys

from moorage.cli.main import COMMAND_MODULES, MoorageApp


def test_the_table_names_exactly_the_commands_each_module_defines() -> None:
    for module, names in COMMAND_MODULES.items():
        defined = importlib.import_module(f"moorage.cli.{module}").COMMANDS
        assert sorted(names) == sorted(defined), module


def test_every_command_is_found_and_loads_its_own_class() -> None:
    app = MoorageApp()
    names = [name for names in COMMAND_MODULES.values() for name in names]
    assert len(names) == len(set(names)), "a command is listed twice"
    for module, module_names in COMMAND_MODULES.items():
        defined = importlib.import_module(f"moorage.cli.{module}").COMMANDS
        for name in module_names:
            factory, found, rest = app.command_manager.find_command([*name.split(), "--x"])
            assert (factory, found, rest) == (defined[name], name, ["--x"])


def test_a_client_command_does_not_import_the_services() -> None:
    """``moorage flavor list`` starts without the compute API, the run player or
    placement's server in the process."""
    code = ("import sys; from moorage.cli.main import MoorageApp; "
            "MoorageApp().command_manager.find_command(['flavor', 'list']); "
            "print(sorted(m for m in ('moorage.api.service', 'moorage.run.player', "
            "'moorage.placement.app') if m in sys.modules))")
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True).stdout.strip()
    assert found == "[]"
