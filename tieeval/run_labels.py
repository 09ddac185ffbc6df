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
from dataclasses import dataclass

from tieeval.errors import InputError, ParameterError

LABEL_KEYS = ("method", "dataset", "task", "seed")
GROUP_KEYS = ("method", "dataset", "task")


class TemplateError(ParameterError):
    """A path template is malformed (unbalanced braces, unknown or repeated field, ...)."""


def check_label(key: str, value) -> str:
    """Validate one label: a known key with a non-empty single-line value; returns the value."""
    if key not in LABEL_KEYS:
        raise ParameterError(f"unknown label {key!r}; labels are {', '.join(LABEL_KEYS)}")
    text = str(value)
    if not text.strip():
        raise ParameterError(f"label {key!r} needs a value (got an empty one)")
    if "\n" in text or "\r" in text:
        raise ParameterError(f"label {key!r} must be a single line, got {text!r}")
    return text


def parse_meta(items) -> dict[str, str]:
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

_FIELD_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Template:
    """A compiled path template: ``{label}`` fields, ``*`` wildcards, literal text.

    A field matches one or more characters inside one path component (never a ``/``);
    ``*`` matches any characters inside one component; ``{{`` and ``}}`` are literal braces.
    The template is matched against the end of the path, so a template written relative to
    the runs folder works whatever folder the paths start with.

    >>> Template.parse("{method}/{dataset}_{task}_seed{seed}.npz").match(
    ...     "runs/ConsRec/Mafengwo_group_seed1.npz")
    {'method': 'ConsRec', 'dataset': 'Mafengwo', 'task': 'group', 'seed': '1'}
    """

    text: str
    fields: tuple[str, ...]
    regex: re.Pattern

    @classmethod
    def parse(cls, text: str) -> "Template":
        if not text:
            raise TemplateError("template is empty")
        parts: list[str] = []
        fields: list[str] = []
        literal: list[str] = []
        previous_field = False  # the last thing emitted was a field (two in a row: ambiguous)
        i = 0

        def flush():
            if literal:
                parts.append(re.escape("".join(literal)))
                literal.clear()

        while i < len(text):
            ch = text[i]
            if text.startswith("{{", i) or text.startswith("}}", i):
                literal.append(ch)
                previous_field = False
                i += 2
                continue
            if ch == "}":
                raise TemplateError(f"unmatched '}}' at position {i} in template {text!r} "
                                    "(write '}}}}' for a literal brace)")
            if ch == "{":
                end = text.find("}", i + 1)
                if end < 0:
                    raise TemplateError(f"unclosed '{{' at position {i} in template {text!r}")
                name = text[i + 1:end]
                if "{" in name:
                    raise TemplateError(f"unclosed '{{' at position {i} in template {text!r}")
                if not name:
                    raise TemplateError(f"empty field '{{}}' at position {i} in template "
                                        f"{text!r}; name a label: "
                                        + ", ".join("{%s}" % k for k in LABEL_KEYS))
                if not _FIELD_RE.fullmatch(name) or name not in LABEL_KEYS:
                    raise TemplateError(f"unknown field {{{name}}} in template {text!r}; "
                                        "fields are " + ", ".join("{%s}" % k for k in LABEL_KEYS))
                if name in fields:
                    raise TemplateError(f"field {{{name}}} appears twice in template {text!r}")
                if previous_field:
                    raise TemplateError(f"fields {{{fields[-1]}}}{{{name}}} touch in template "
                                        f"{text!r}; put a separator between them")
                flush()
                parts.append(f"(?P<{name}>[^/]+?)")
                fields.append(name)
                previous_field = True
                i = end + 1
                continue
            if ch == "*":
                flush()
                parts.append("[^/]*?")
                previous_field = False
                i += 1
                continue
            literal.append("/" if ch == os.sep else ch)
            previous_field = False
            i += 1
        flush()
        if not fields:
            raise TemplateError(f"template {text!r} has no fields; use "
                                + ", ".join("{%s}" % k for k in LABEL_KEYS))
        pattern = "(?:^|/)" + "".join(parts) + "$"
        return cls(text, tuple(fields), re.compile(pattern))

    def match(self, path: str) -> dict[str, str] | None:
        """The labels in ``path``, or None when the path does not fit the template."""
        norm = os.fspath(path).replace(os.sep, "/")
        m = self.regex.search(norm)
        if m is None:
            return None
        return {k: v for k, v in m.groupdict().items()}


def file_stem(path: str) -> str:
    """The file name without folders and without its suffix: ``runs/a.b.npz`` -> ``a.b``."""
    name = os.path.basename(os.fspath(path))
    stem, _ = os.path.splitext(name)
    return stem or name


def resolve_labels(path: str, metadata: dict | None = None, *, meta: dict | None = None,
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
    sources: list[dict] = [dict(meta or {})]
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
