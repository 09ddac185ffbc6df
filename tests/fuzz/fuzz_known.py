"""Findings of the fuzzing harness whose fixes are under way, recognised by signature.

Each known defect has an ``xfail(strict=False)`` test in tests/fuzz/test_fuzz.py that
asserts no mutant shows it: it reports XFAIL while the defect is there and passes (XPASS)
once the fix lands; any finding that matches none of these fails its format's test.
"""

from __future__ import annotations

import re

KNOWN = {
    "npz-duplicate-members":
        "an NPZ with two 'scores' members (scores.npy twice, or scores and scores.npy) is "
        "evaluated from one of them instead of refused as ambiguous",
    "trec-underscore-number":
        "TREC scores and relevance such as '1_000' are read as 1000 (Python's float/int "
        "syntax); trec_eval reads 1.0 and such a field is not a number in the format",
    "parquet-rows-lost":
        "a Parquet data page damaged in a file without page checksums decodes to fewer rows "
        "than the footer declares (pyarrow.parquet.read_table refuses the file) and tieeval "
        "averages the rows that survived",
}

_UNDERSCORE = re.compile(r"'[^' ]*_[^' ]*' is not a number")
_PARQUET = ("parquet_list", "parquet_fixed", "long_parquet")


def known_defect(record: dict) -> str | None:
    """The name of the known defect a finding shows, or None."""
    finding = record.get("finding")
    if not finding:
        return None
    fmt = record["fmt"]
    if fmt.startswith("npz") and "ambiguous members" in finding:
        return "npz-duplicate-members"
    if fmt == "trec" and _UNDERSCORE.search(finding):
        return "trec-underscore-number"
    if fmt in _PARQUET and ("the independent reader refuses: pyarrow" in finding
                            or "rows read," in finding):
        return "parquet-rows-lost"
    return None
