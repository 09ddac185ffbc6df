"""The command table of ``tieeval.cli`` (``COMMANDS``: which module holds each command, so
that a command is imported only when it runs; ``SUMMARIES``: its line in ``--help``) names
every command the package's modules define: a command module missing there would be
silently absent from the command line."""

from __future__ import annotations

import importlib
import pkgutil

import click

import tieeval.cli as package
from tieeval.cli import COMMANDS, SUMMARIES


def test_every_command_a_module_defines_is_in_the_table():
    defined = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for attr, value in vars(module).items():
            if (isinstance(value, click.Command) and not isinstance(value, click.Group)
                    and value.callback is not None
                    and value.callback.__module__ == module.__name__):
                defined[value.name] = module.__name__
                assert attr == value.name, (f"{module.__name__}.{attr} holds the command "
                                            f"{value.name!r}: name it {value.name}")
    for name, module in defined.items():
        assert COMMANDS.get(name) == module, (
            f"tieeval/cli/__init__.py: COMMANDS lacks {name!r}: {module!r}")
        assert name in SUMMARIES, f"tieeval/cli/__init__.py: SUMMARIES lacks {name!r}"
    assert set(COMMANDS) == set(defined), "COMMANDS names a command no module defines"
    assert set(SUMMARIES) == set(COMMANDS)
