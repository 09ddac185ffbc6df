"""Run labels: which method, dataset, task and seed a score dump belongs to.

A run's labels come from four sources; for each label the first source that has it wins:

1. the command line (``--meta method=ConsRec``), given as a dict of overrides;
2. a path template (``--template '{method}/{dataset}_{task}_seed{seed}.npz'``) matched
   against the end of the dump's path;
3. the dump's own metadata (Parquet key-value metadata, NPZ 0-d string entries);
4. the file name: a run without a ``method`` is named after its file (stem, no suffix).

Any label may stay absent (None). Runs whose labels are equal except ``seed`` form one
group (see :mod:`tieeval.analysis.groups`).
"""


from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tieeval.errors import InputError, ParameterError

LABEL_KEYS = ("method", "dataset", "task", "seed")
GROUP_KEYS = ("method", "dataset", "task")


class RunLabelled:
    """``labels``: the older name of a result's ``run_labels`` (method / dataset / task /
    seed), kept so that code written against it keeps working. Relevance labels are never
    called ``run_labels``; the JSON key stays ``"labels"`` (the output contract)."""

    run_labels: dict[str, Any]

    @property
    def labels(self) -> dict[str, Any]:
        return self.run_labels

    @labels.setter
    def labels(self, value: dict[str, Any]) -> None:
        self.run_labels = value


class TemplateError(ParameterError):
    """A path template is malformed (unbalanced braces, unknown or repeated field, ...)."""


def check_label(key: str, value: object) -> str:
    """Validate one label: a known key with a non-empty single-line value; returns the value."""
    if key not in LABEL_KEYS:
        raise ParameterError(f"unknown label {key!r}; labels are {', '.join(LABEL_KEYS)}")
    text = str(value)
    if not text.strip():
        raise ParameterError(f"label {key!r} needs a value (got an empty one)")
    if "\n" in text or "\r" in text:
        raise ParameterError(f"label {key!r} must be a single line, got {text!r}")
    return text


def parse_meta(items: Iterable[object]) -> dict[str, str]:
    """``["method=ConsRec", "seed=1"]`` -> ``{"method": "ConsRec", "seed": "1"}``.

    >>> parse_meta(["method=ConsRec", "seed=1"])
    {'method': 'ConsRec', 'seed': '1'}
    """
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = str(item).partition("=")
        key = key.strip()
        if not sep or not key:
            raise ParameterError(f"expected KEY=VALUE (e.g. method=ConsRec), got {item!r}")
        if key in out and out[key] != value:
            raise ParameterError(f"label {key!r} given twice ({out[key]!r} and {value!r})")
        out[key] = check_label(key, value)
    return out


# ---------------------------------------------------------------------------------------
# path templates

# A template's tokens: a literal brace, a field, a lone brace (an error), a wildcard, a
# path separator, other text.
_SPECIAL = re.escape("{}*/" + os.sep)
_TOKEN = re.compile(rf"\{{\{{|\}}\}}|\{{[^{{}}]*\}}|[{_SPECIAL}]|[^{_SPECIAL}]+")
_FIELDS = ", ".join("{%s}" % k for k in LABEL_KEYS)  # the fields a template may name


# One path component of a template: the literal text before the first wildcard, then
# (wildcards, literal) pairs, where the wildcards are a run of adjacent ``*`` (None) and
# fields (their names) and the literal is the text up to the next run (empty only at the
# end of the component).
_Segment = tuple[str, tuple[tuple[tuple[str | None, ...], str], ...]]


def _segment(parts: list[str | tuple[str | None]]) -> _Segment:
    """One component's text and wildcards (1-tuples), in order, as a :data:`_Segment`."""
    head = ""
    runs: list[tuple[tuple[str | None, ...], str]] = []
    for part in parts:
        if isinstance(part, str) and not runs:
            head += part
        elif isinstance(part, str):
            runs[-1] = (runs[-1][0], runs[-1][1] + part)
        elif runs and not runs[-1][1]:  # adjacent wildcards share a run
            runs[-1] = (runs[-1][0] + part, "")
        else:
            runs.append((part, ""))
    return head, tuple(runs)


def _match_segment(segment: _Segment, text: str, found: dict[str, str]) -> bool:
    """Match one path component against one template segment, in linear time.

    Wildcards never cross a ``/``, so each component is matched on its own. Every literal
    between two wildcard runs is placed at its leftmost occurrence that leaves the run
    before it long enough (a field needs one character, a ``*`` none): any later occurrence
    only leaves less room for the rest, so if the leftmost one fails, all do. The last
    literal must end the component. This is the match a backtracking regex with lazy
    wildcards (``[^/]*?``, ``[^/]+?``) would find -- each wildcard as short as possible,
    left to right -- without its exponential worst case. Fills ``found`` with the fields.
    """
    head, runs = segment
    if not runs:
        return text == head
    if not text.startswith(head):
        return False
    pos = len(head)
    spans = []
    for i, (wildcards, literal) in enumerate(runs):
        need = sum(1 for w in wildcards if w is not None)
        if i == len(runs) - 1:
            end = len(text) - len(literal)
            if end - pos < need or not text.endswith(literal):
                return False
        else:
            end = text.find(literal, pos + need)
            if end < 0:
                return False
        spans.append((wildcards, pos, end))
        pos = end + len(literal)
    for wildcards, start, end in spans:
        # Within a run, every wildcard but the last takes its minimum; the last the rest.
        for j, name in enumerate(wildcards):
            width = end - start if j == len(wildcards) - 1 else (0 if name is None else 1)
            if name is not None:
                found[name] = text[start:start + width]
            start += width
    return True


@dataclass(frozen=True)
class Template:
    """A compiled path template: ``{label}`` fields, ``*`` wildcards, literal text.

    A field matches one or more characters inside one path component (never a ``/``);
    ``*`` matches any characters inside one component; ``{{`` and ``}}`` are literal braces.
    The template is matched against the end of the path, so a template written relative to
    the runs folder works whatever folder the paths start with. When a component can be
    split in several ways, each field and ``*`` takes as few characters as it can, left to
    right. Matching takes time linear in the length of the path for a given template.

    >>> Template.parse("{method}/{dataset}_{task}_seed{seed}.npz").match(
    ...     "runs/ConsRec/Mafengwo_group_seed1.npz")
    {'method': 'ConsRec', 'dataset': 'Mafengwo', 'task': 'group', 'seed': '1'}
    """

    text: str
    fields: tuple[str, ...]
    segments: tuple[_Segment, ...]  # one per path component, from the first to the file

    @classmethod
    def parse(cls, text: str) -> "Template":
        if not text:
            raise TemplateError("template is empty")
        segments: list[_Segment] = []
        fields: list[str] = []
        parts: list[str | tuple[str | None]] = []  # the current component: text, wildcards
        previous_field = False  # two fields in a row would be ambiguous
        for m in _TOKEN.finditer(text):
            token, i = m.group(), m.start()
            name = token[1:-1] if token[0] == "{" and token[-1] == "}" and token != "{{" \
                else None
            if token in ("{{", "}}"):
                parts.append(token[0])
            elif token == "}":
                raise TemplateError(f"unmatched '}}' at position {i} in template {text!r} "
                                    "(write '}}}}' for a literal brace)")
            elif token == "{":
                raise TemplateError(f"unclosed '{{' at position {i} in template {text!r}")
            elif name is not None:
                if not name:
                    raise TemplateError(f"empty field '{{}}' at position {i} in template "
                                        f"{text!r}; name a label: {_FIELDS}")
                if name not in LABEL_KEYS:
                    raise TemplateError(f"unknown field {{{name}}} in template {text!r}; "
                                        f"fields are {_FIELDS}")
                if name in fields:
                    raise TemplateError(f"field {{{name}}} appears twice in template {text!r}")
                if previous_field:
                    raise TemplateError(f"fields {{{fields[-1]}}}{{{name}}} touch in template "
                                        f"{text!r}; put a separator between them")
                parts.append((name,))
                fields.append(name)
            elif token == "*":
                parts.append((None,))
            elif token in ("/", os.sep):
                segments.append(_segment(parts))
                parts = []
            else:
                parts.append(token)
            previous_field = name is not None
        segments.append(_segment(parts))
        if not fields:
            raise TemplateError(f"template {text!r} has no fields; use {_FIELDS}")
        return cls(text, tuple(fields), tuple(segments))

    def match(self, path: str) -> dict[str, str] | None:
        """The labels in ``path``, or None when the path does not fit the template."""
        parts = os.fspath(path).replace(os.sep, "/").split("/")
        if len(parts) < len(self.segments):
            return None
        found: dict[str, str] = {}
        tail = parts[len(parts) - len(self.segments):]
        for segment, part in zip(self.segments, tail):
            if not _match_segment(segment, part, found):
                return None
        return {name: found[name] for name in self.fields}


def file_stem(path: str) -> str:
    """The file name without folders and without its suffix: ``runs/a.b.npz`` -> ``a.b``."""
    name = os.path.basename(os.fspath(path))
    stem, _ = os.path.splitext(name)
    return stem or name


def resolve_labels(path: str, metadata: Mapping[str, Any] | None = None, *,
                   meta: Mapping[str, Any] | None = None,
                   template: Template | None = None) -> dict[str, str]:
    """The labels of the run stored at ``path`` (absent labels are left out).

    ``meta`` overrides everything, then the ``template`` match, then the file's
    ``metadata``; a run still without a method is named after its file.
    Raises :class:`~tieeval.errors.InputError` when a template is given and the path does
    not fit it.

    >>> resolve_labels("runs/x.npz", {"method": "A", "seed": "3", "note": "n"},
    ...                meta={"dataset": "Mafengwo"})
    {'method': 'A', 'dataset': 'Mafengwo', 'seed': '3'}
    >>> resolve_labels("runs/x.npz")
    {'method': 'x'}
    """
    sources: list[dict[str, Any]] = [dict(meta or {})]
    if template is not None:
        found = template.match(path)
        if found is None:
            raise InputError(f"{path}: does not match --template {template.text!r}")
        sources.append(found)
    sources.append({k: v for k, v in (metadata or {}).items()
                    if k in LABEL_KEYS and v is not None and str(v).strip()})
    sources.append({"method": file_stem(path)})
    out: dict[str, str] = {}
    for key in LABEL_KEYS:
        for source in sources:
            if source.get(key) is not None:
                out[key] = str(source[key])
                break
    return out
