"""How a notebook shows a record (``_repr_html_``), registered by the rendering layer.

Records sit below the renderers and import none of them. A renderer module registers an
HTML function per record kind with :func:`register_html` when it is imported
(:mod:`tieeval.report.notebook` does); ``tieeval/__init__`` names that module with
:func:`provided_by`, so that the first record a notebook shows imports it, and
``import tieeval`` alone loads no renderer. Without a registered function a record has no
HTML, and the notebook shows its ``repr``.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

_HTML: dict[str, Callable[[Any], str]] = {}
_PROVIDERS: list[str] = []


def register_html(kind: str) -> Callable[[Callable[[Any], str]], Callable[[Any], str]]:
    """Register the decorated ``func(record) -> str`` as the HTML of records of ``kind``
    (``run``, ``group``, ``diff``)."""
    def decorate(func: Callable[[Any], str]) -> Callable[[Any], str]:
        _HTML[kind] = func
        return func
    return decorate


def provided_by(module: str) -> None:
    """Name a module that registers HTML functions when imported."""
    if module not in _PROVIDERS:
        _PROVIDERS.append(module)


def html(kind: str, record: Any) -> str | None:
    """The HTML of ``record`` (of ``kind``), or None when no function is registered."""
    if kind not in _HTML:
        for module in _PROVIDERS:
            importlib.import_module(module)
    render = _HTML.get(kind)
    return None if render is None else render(record)
