"""Defects the fuzzing harness found in the readers, recognised by signature.

Each has a test in tests/fuzz/test_fuzz.py (``test_known_defect_is_gone[NAME]``) asserting
that no mutant shows it: a regression names the defect it brings back. (While a fix is under
way, its test carries ``pytest.mark.xfail(strict=False, reason=...)``.) Any other finding
fails its format's test.
"""

from __future__ import annotations

KNOWN = {
    "npz-duplicate-members":
        "an NPZ with two members of one name (scores.npy twice, scores and scores.npy, "
        "positive.npy twice) is evaluated from one of them instead of refused as ambiguous",
    "trec-underscore-number":
        "TREC scores and relevance such as '1_000' are read as 1000 (Python's float/int "
        "syntax) where trec_eval reads 1.0",
    "parquet-rows-lost":
        "a Parquet data page damaged in a file without page checksums decodes to fewer rows "
        "than the footer declares (pyarrow.parquet.read_table refuses the file) and tieeval "
        "averages the rows that survived",
}

_PARQUET = ("parquet_list", "parquet_fixed", "long_parquet")


def _python_number_with_underscore(token: bytes) -> bool:
    if b"_" not in token:
        return False
    try:
        float(token)
    except ValueError:
        return False
    return True


def _has_underscore_number(record: dict) -> bool:
    """The mutant's run or qrels has a score / relevance that Python reads with its '_'."""
    for key, column, fields in (("path", 4, None), ("qrels", 3, 4)):
        path = record.get(key)
        if not path:
            continue
        try:
            with open(path, "rb") as fh:
                lines = fh.read().split(b"\n")
        except OSError:
            continue
        for line in lines:
            tokens = line.split()
            if len(tokens) > column and (fields is None or len(tokens) == fields) \
                    and _python_number_with_underscore(tokens[column]):
                return True
    return False


def known_defect(record: dict) -> str | None:
    """The name of the known defect a finding shows, or None."""
    finding = record.get("finding")
    if not finding:
        return None
    fmt = record["fmt"]
    if fmt.startswith("npz") and "ambiguous members" in finding:
        return "npz-duplicate-members"
    if fmt == "trec" and _has_underscore_number(record):
        return "trec-underscore-number"
    if fmt in _PARQUET and ("the independent reader refuses: pyarrow" in finding
                            or "rows read," in finding):
        return "parquet-rows-lost"
    return None
