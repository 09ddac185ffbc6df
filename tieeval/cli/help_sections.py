"""The sections of every command's ``--help``: which heading each option is listed under.

A command has up to fifty options; one flat list hides the few a newcomer needs. Each
option belongs to one section, named here once for every command (the options are shared
between commands through the decorators of ``cli/common.py``). An option missing from
this table is listed under "Other options", and a test (tests/cli/test_help_sections.py)
fails until it is given a section."""

from __future__ import annotations

# (title, options) in the order the sections are printed.
SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Metrics", (
        "--k", "--metric", "--gain", "--discount", "--alpha", "--log-base", "--gamma",
        "--short-list", "--ap-norm", "--recall-norm", "--precision-norm",
        "--relevant-scores")),
    ("Ranking rule and convention", ("--original", "--convention")),
    ("Relevance", (
        "--qrels", "--missing-queries", "--judged-only", "--relevance-level", "--depth",
        "--no-relevant", "--both", "--labels", "--labels-column", "--positives-column",
        "--negatives-column", "--items-column")),
    ("Checks (a failed check exits 1)", (
        "--max-change", "--max-inflation", "--max-change-sigma", "--max-spread",
        "--max-tie-decided", "--max-gap", "--min", "--max-tie-frequency",
        "--max-positive-tie-frequency")),
    ("Claims", ("--claims", "--ignore-unmatched")),
    ("Significance", ("--permutations", "--seed", "--confidence", "--fail-if-worse")),
    ("What-ifs", ("--cast", "--tolerance")),
    ("Output", (
        "--format", "--output", "--column", "--per-query", "--no-summary", "--table", "--plot",
        "--per-instance", "--meta", "--template", "--group-by-tag", "--seed-std", "--quiet",
        "--progress")),
    ("Input", (
        "--layout", "--scores-column", "--positive-column", "--positive-index",
        "--score-dtype", "--score-column", "--label-column", "--position-column",
        "--instance-column", "--nan-policy")),
    ("Performance", ("--engine", "--spark-conf", "--jobs", "--batch-rows")),
    ("Other options", ("--help",)),
)

OTHER = "Other options"

_SECTION_OF = {option: title for title, options in SECTIONS for option in options}


def section_of(option: str) -> str:
    """The section of an option, by its long name (``--k``); "Other options" if unnamed."""
    return _SECTION_OF.get(option, OTHER)
