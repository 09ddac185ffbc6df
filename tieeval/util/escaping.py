"""User text as every output shows it: :func:`escape` is the one function that makes a
file name, a label, a method or metric name as the user wrote it, a query id or a message
quoting them safe for the stream it is written to.

Every target starts from the same one-line form (``to="line"``, what errors, warnings, the
progress bar and the text formats print): characters that are not printable (line breaks,
carriage returns, escape codes, Unicode line separators) are written as Python escapes
(``\\n``, ``\\r``, ``\\x1b``), so that no text from outside starts a line, moves the cursor
or colours a terminal; ``::`` is written ``:\\x3a`` and ``##[`` ``#\\x23[``, so that no text
from outside can be read as a GitHub Actions workflow command (the runner reads ``::name``
at the start of a line, after spaces, and the older ``##[name]`` anywhere in one), whatever
column or wrapped line it lands in. The other targets escape that form further for their
own syntax:

* ``markdown``: a Markdown table cell or line (``\\ | * _ ` [ ] < >`` backslash-escaped,
  so that a ``|`` never splits a cell and no HTML tag reaches the page);
* ``html``: text or an attribute value of an HTML page;
* ``latex``: LaTeX text (``& % $ # _ { } ~ ^ \\`` and a few Unicode signs);
* ``xml``: an XML 1.0 text node or attribute (the one-line form holds no character XML
  cannot; the XML writer escapes ``<``, ``&`` and quotes);
* ``csv``: a CSV cell (the CSV writer quotes what needs it);
* ``rich``: rich markup (a table title or cell), tag-like brackets escaped;
* ``plot``: a label of a matplotlib figure (``$``, which starts its mathtext, escaped);
* ``github-data`` and ``github-property``: the data and a property of a workflow command,
  in the runner's own percent-encoding, which it decodes back to the text exactly (a
  command's line is tieeval's own, so nothing in it is escaped to one line).

This module sits below every other (it imports only the standard library), so every layer
writes user text through it.
"""

from __future__ import annotations

import re

TARGETS = ("line", "markdown", "html", "latex", "xml", "csv", "rich", "plot", "github-data",
           "github-property")

_MARKDOWN = re.compile(r"([\\|*_`\[\]<>])")  # a backslash and the characters it escapes

_LATEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
          "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
          "^": r"\textasciicircum{}", "±": r"$\pm$", "–": "--", "—": "---",
          "→": r"$\rightarrow$", "×": r"$\times$", "†": r"\dag{}", "‡": r"\ddag{}",
          "<": r"\textless{}", ">": r"\textgreater{}", "γ": r"$\gamma$"}

# rich's markup tags: [bold], [/], [#ff0000], [@click] (as rich.markup finds them)
_RICH_TAG = re.compile(r"(\\*)(\[[a-z#/@][^[]*?])")


def _one_line(text: str) -> str:
    if text.isprintable() and "::" not in text and "##[" not in text:
        return text
    out = "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)
    return out.replace("::", ":\\x3a").replace("##[", "#\\x23[")


def _rich(text: str) -> str:
    out = _RICH_TAG.sub(lambda m: f"{m.group(1)}{m.group(1)}\\{m.group(2)}", text)
    # a trailing backslash would escape a tag that follows in the same markup string
    return out + "\\" if out.endswith("\\") and not out.endswith("\\\\") else out


def _github_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape(text, to: str = "line") -> str:
    """``text`` (any object, as ``str()`` writes it) made safe for ``to``, one of
    :data:`TARGETS` (see the module's docstring).

    >>> escape("w\\n::error title=x::y")
    'w\\\\n:\\\\x3aerror title=x:\\\\x3ay'
    >>> escape("a|b\\nc", "markdown")
    'a\\\\|b\\\\\\\\nc'
    >>> escape("<b>&", "html"), escape("50%_", "latex")
    ('&lt;b&gt;&amp;', '50\\\\%\\\\_')
    >>> escape("a\\n::b,c%", "github-property")
    'a%0A%3A%3Ab%2Cc%25'
    """
    text = str(text)
    if to == "github-data":
        return _github_data(text)
    if to == "github-property":
        return _github_data(text).replace(":", "%3A").replace(",", "%2C")
    line = _one_line(text)
    if to in ("line", "xml", "csv"):
        return line
    if to == "markdown":
        return _MARKDOWN.sub(r"\\\1", line)
    if to == "html":
        from html import escape as html_escape
        return html_escape(line, quote=True)
    if to == "latex":
        return "".join(_LATEX.get(ch, ch) for ch in line)
    if to == "rich":
        return _rich(line)
    if to == "plot":
        return line.replace("$", r"\$")
    raise ValueError(f"escape: 'to' must be one of {', '.join(TARGETS)}, got {to!r}")
