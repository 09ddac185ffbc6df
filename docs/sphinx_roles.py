"""A griffe extension for the API reference: the Sphinx roles of tieeval's docstrings
(``:func:`x```, ``:class:`~a.b.C```) rendered as code (``x``, ``C``), as Sphinx shows them."""

from __future__ import annotations

import re

import griffe

ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|data|attr|exc|obj):`(~?)([^`]+)`")


def _code(match: re.Match) -> str:
    short, target = match.groups()
    return f"`{target.rsplit('.', 1)[-1] if short else target}`"


class SphinxRoles(griffe.Extension):
    def on_object(self, *, obj, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = ROLE.sub(_code, obj.docstring.value)
