"""Renderers registered per (result kind, output format).

A renderer turns one result record into one output format and writes it to an
:class:`Output`; each module of :mod:`tieeval.report` registers its own on import
(:func:`register`). The command line takes a kind's ``--format`` choices, default and help,
and the renderer of the format chosen, from here; it never compares format names itself.
docs/architecture.md ("Renderers") lists the kinds, their records and formats, and what
adding a format takes.
"""

from __future__ import annotations

import importlib
import itertools
import pkgutil
from dataclasses import dataclass
from typing import Any, Callable, Protocol

from tieeval.errors import ParameterError


class Output(Protocol):
    """Where a renderer writes (stdout, an ``--output`` file, a buffer in tests): text as it
    is, a rich console for the terminal tables, or the text stream itself for renderers
    that size their own console."""

    def write(self, text: str) -> None: ...

    def console(self) -> Any: ...

    def stream(self) -> Any: ...


@dataclass(frozen=True)
class Renderer:
    """One registered renderer: ``render(result, out)`` writes ``result`` of ``kind`` in
    ``format``. ``help`` says what the format holds (the ``--format`` help joins them);
    ``machine_readable`` formats (one record per line, or JSON) are read by programs rather
    than people; ``takes`` names the command-line options only this format uses;
    ``before()``, if given, is called before the evaluation, to refuse at once a file the
    format writes besides its output (the job summary of ``check --format github``);
    ``progress_bar``: whether a progress bar may be drawn on a terminal while the output
    is made (not for formats read by programs, the runner or a browser: the bar's frames
    and clearing codes would land among their lines where stdout and stderr are one)."""

    kind: str
    format: str
    render: Callable[[Any, Output], None]
    help: str = ""
    machine_readable: bool = False
    takes: tuple[str, ...] = ()
    progress_bar: bool = True
    # the formats' listed order: this package's modules by name, then others (a plug-in's),
    # each module's renderers as registered; import order never changes it
    order: tuple[bool, str, int] = (False, "", 0)
    before: Callable[[], None] | None = None


_RENDERERS: dict[str, dict[str, Renderer]] = {}
_COUNTER = itertools.count()
_loaded: set[str] = set()  # the modules of this package imported for their renderers

#: The kinds each module of this package registers renderers of, ``()`` for a module that
#: registers none: a command imports only the modules of its own kind. It only saves
#: imports: a module of the package missing here (found by ``pkgutil``) is imported for
#: every kind, so a new renderer is never left out of ``--format``, and
#: tests/cli/test_formats.py fails naming the line to add.
MODULE_KINDS = {"tables": ("runs", "ties"), "trec_eval": ("runs",), "webpage": ("runs",),
                "check": ("check",), "junit": ("check",), "diff": ("diff", "rank"),
                "audit": ("audit",), "format": (), "notebook": (), "paper": (), "plot": (),
                "registry": (), "runs": (), "whatif": ()}


def register(kind: str, fmt: str, help: str = "", *, machine_readable: bool = False,
             takes: tuple[str, ...] = (), before: Callable[[], None] | None = None,
             progress_bar: bool | None = None):
    """Register the decorated ``func(result, out)`` as the renderer of ``kind`` in
    ``fmt``; a second renderer for the same pair is an error. ``progress_bar`` defaults
    to ``not machine_readable``."""
    def decorate(func):
        by_format = _RENDERERS.setdefault(kind, {})
        if fmt in by_format:
            raise ValueError(f"a renderer of {kind!r} in {fmt!r} is registered twice "
                             f"({by_format[fmt].render.__module__} and {func.__module__})")
        bar = not machine_readable if progress_bar is None else progress_bar
        by_format[fmt] = Renderer(kind, fmt, func, help, machine_readable, tuple(takes), bar,
                                  (not func.__module__.startswith(__package__ + "."),
                                   func.__module__, next(_COUNTER)), before)
        return func
    return decorate


def _load(kind: str | None = None) -> None:
    """Import the modules of :mod:`tieeval.report` that register renderers of ``kind``
    (every module when ``kind`` is None or listed by none in :data:`MODULE_KINDS`), and
    every module the table does not list: each registers its renderers on import.
    Rendering one kind leaves the other kinds' modules (and the records they import)
    unloaded."""
    import tieeval.report as package
    names = [module.name for module in pkgutil.iter_modules(package.__path__)]
    if kind is not None and any(kind in kinds for kinds in MODULE_KINDS.values()):
        names = [name for name in names if kind in MODULE_KINDS.get(name, (kind,))]
    for name in names:
        if name not in _loaded:
            importlib.import_module(f"{package.__name__}.{name}")
            _loaded.add(name)


def kinds() -> tuple[str, ...]:
    _load()
    return tuple(sorted(_RENDERERS))


def renderers(kind: str) -> list[Renderer]:
    """The renderers of ``kind``, in the order ``--format`` lists them (the first is the
    default)."""
    _load(kind)
    if kind not in _RENDERERS:
        raise ParameterError(f"no renderer for results of kind {kind!r} (kinds: "
                             f"{', '.join(sorted(_RENDERERS))})")
    return sorted(_RENDERERS[kind].values(), key=lambda r: r.order)


def formats(kind: str) -> tuple[str, ...]:
    return tuple(r.format for r in renderers(kind))


def renderer(kind: str, fmt: str) -> Renderer:
    """The renderer of ``kind`` in ``fmt``; ParameterError naming the formats otherwise."""
    for r in renderers(kind):
        if r.format == fmt:
            return r
    raise ParameterError(f"format must be one of {', '.join(formats(kind))}, got {fmt!r}")


def taking(kind: str, option: str) -> tuple[str, ...]:
    """The formats of ``kind`` that use the command-line ``option``."""
    return tuple(r.format for r in renderers(kind) if option in r.takes)


def describe(kind: str) -> str:
    """The ``--format`` help of ``kind``: each format with what it holds."""
    return "; ".join(f"{r.format}: {r.help}" if r.help else r.format
                     for r in renderers(kind)) + "."


def render(kind: str, fmt: str, result: Any, out: Output) -> None:
    renderer(kind, fmt).render(result, out)
