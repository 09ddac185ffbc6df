"""CSV, long layout only: a header row, then a row per instance and candidate, optionally
gzip-compressed (:mod:`tieeval.io.long`)."""

from __future__ import annotations

from tieeval.io.readers import Reader, opened_by


def looks_like(first_line: bytes) -> bool:
    """A header row of comma-separated text (standard input has no name to go by; a TREC
    run's fields are separated by white space)."""
    try:
        text = first_line.decode("utf-8-sig").rstrip("\r")
    except UnicodeDecodeError:
        return False
    return "," in text and text.isprintable()


READER = Reader("csv", "CSV", opened_by("tieeval.io.long", "open_long_csv"),
                suffixes=(".csv", ".csv.gz"), layouts=("long",), looks_like=looks_like,
                carries=frozenset({"labels", "ids"}), order=3)
