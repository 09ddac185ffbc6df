"""The ``tieeval`` command line: parse options, call the library, map errors to exit codes
(listed in :func:`cli`'s help). Each command lives in its own module and is registered
here.
"""

from __future__ import annotations

import signal

import click

from tieeval._version import __version__
from tieeval.cli.app import Group, expand_multi_value

__all__ = ["cli", "main", "program", "expand_multi_value"]


# Each command's module is imported when the command runs or shows its help, so that
# `tieeval --version`, `tieeval --help` and every command load only what they use.
COMMANDS = {"compare": "tieeval.cli.compare", "ties": "tieeval.cli.ties",
            "check": "tieeval.cli.check", "diff": "tieeval.cli.diff",
            "rank": "tieeval.cli.diff", "audit": "tieeval.cli.audit"}


#: The first paragraph of each command's help, which ``tieeval --help`` shortens to list
#: the commands: kept here so that listing them imports none (numpy, the engine, ...);
#: tests/cli/test_cli.py checks them against the commands' own help.
SUMMARIES = {
    "compare": "Original / first / last / tie-aware HR@K, NDCG@K and MRR of score dumps.",
    "ties": "Top-score tie statistics per method: the paper's Table 4.",
    "check": "Fail CI when ties decide a dump's metrics: exit 0 pass, 1 fail, 2 error.",
    "diff": "Paired comparison of run B against run A on the same instances.",
    "rank": "Rank methods by tie-aware value, with the original ranking beside it.",
    "audit": "Judge published numbers against the dumps: exit 0 consistent, 1 flagged, "
             "2 error.",
}


class LazyGroup(Group):
    """A group whose commands are imported on first use."""

    def format_commands(self, ctx, formatter):
        """The commands as click lists them (each help's first paragraph, shortened to the
        width), from :data:`SUMMARIES`."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        with formatter.section("Commands"):  # shortened as click shortens a command's help
            formatter.write_dl([(name, click.Command(name, help=SUMMARIES[name])
                                 .get_short_help_str(limit)) for name in names])

    def list_commands(self, ctx):
        return list(COMMANDS)

    def get_command(self, ctx, name):
        module = COMMANDS.get(name)
        if module is None:
            return None
        import importlib
        return getattr(importlib.import_module(module), name)

    @property
    def commands(self):  # every command, for documentation and tests
        return {name: self.get_command(None, name) for name in COMMANDS}

    @commands.setter
    def commands(self, value):  # click's Group.__init__ sets it; the table above rules
        pass


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]},
             epilog="User guide: see docs/index.md; every command's options: see "
                    "docs/commands.md.")
@click.version_option(__version__, "--version", prog_name="tieeval")
def cli():
    """Exact tie-aware evaluation of saved ranking score dumps.

    Re-evaluates the scores a recommender or IR codebase ranked and shows, side by side,
    what its own np.argsort gave (Original), the optimistic and pessimistic tie-breaks
    (First / Last), and the exact expectation under uniform random tie-breaking
    (Tie-aware), with tie statistics.

    \b
    Example:
      tieeval compare sample_scores/sigmoid_saturated.parquet --k 1 5 10

    Exit codes: 0 success, 1 a check failed, diff --fail-if-worse found B worse or an
    audit flagged a claim, 2 usage or input error, 3 internal error, 130 interrupted
    (129 SIGHUP, 143 SIGTERM, 141 SIGPIPE).
    """


def main(args=None, prog_name: str = "tieeval") -> None:
    """Console entry point."""
    if hasattr(signal, "SIGPIPE"):
        # `tieeval ... | head` must end quietly, not with a BrokenPipeError traceback.
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    cli.main(args=args, prog_name=prog_name)


def program(prog_name: str = "tieeval") -> None:
    """The ``tieeval`` program (the console script, ``python -m tieeval``): :func:`main` on
    ``sys.argv``, then the process ends without the interpreter's teardown
    (:mod:`tieeval.cli.quick_exit`)."""
    try:
        main(prog_name=prog_name)
    except SystemExit as done:
        from tieeval.cli.quick_exit import end
        end(done.code)
        raise
