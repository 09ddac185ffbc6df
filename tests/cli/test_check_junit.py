"""``tieeval check --format junit``: the report CI test reporters read, its counts and
failures against pass/fail worked out here from the scores, and the structure of the
JUnit schema Jenkins and GitLab read (junit-10.xsd)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest
from click.testing import CliRunner

from tieeval.cli import cli

# What junit-10.xsd allows: each element's required and optional attributes and children.
SCHEMA = {
    "testsuites": (set(), {"name", "time", "tests", "failures", "errors"}, {"testsuite"}),
    "testsuite": ({"name", "tests", "failures", "errors"},
                  {"group", "time", "skipped", "timestamp", "hostname", "id", "package",
                   "file", "log", "url"},
                  {"testsuite", "properties", "testcase", "system-out", "system-err"}),
    "testcase": ({"name"}, {"time", "classname", "group"},
                 {"skipped", "error", "failure", "system-out", "system-err"}),
    "failure": (set(), {"type", "message"}, set()),
    "error": (set(), {"type", "message"}, set()),
    "system-out": (set(), set(), set()),
    "properties": (set(), set(), {"property"}),
    "property": ({"name", "value"}, set(), set()),
}


def schema_errors(element: ET.Element) -> list[str]:
    required, optional, children = SCHEMA[element.tag]
    attrs = set(element.attrib)
    errors = [f"{element.tag}: missing {sorted(required - attrs)}"] if required - attrs else []
    if attrs - required - optional:
        errors.append(f"{element.tag}: unknown {sorted(attrs - required - optional)}")
    for child in element:
        if child.tag not in children:
            errors.append(f"{element.tag} holds {child.tag}")
        else:
            errors += schema_errors(child)
    return errors


def _dumps(tmp_path):
    """Three dumps whose top-score tie frequency and tie-aware HR@1 are known by hand:
    the positive is column 0. ``tied``: 3 of 4 rows tie the top score (the positive in a
    tie of 2, 3 and 4, then alone on top): HR@1 = (1/2 + 1/3 + 1/4 + 1) / 4. ``free``: no
    tie, the positive on top in 3 of 4 rows. ``odd&<name>"``: a name XML must escape."""
    tied = np.array([[0.9, 0.9, 0.1, 0.0], [0.5, 0.5, 0.5, 0.1],
                     [0.7, 0.7, 0.7, 0.7], [0.8, 0.1, 0.2, 0.3]])
    free = np.array([[0.9, 0.8, 0.1, 0.0], [0.5, 0.6, 0.4, 0.1],
                     [0.7, 0.6, 0.5, 0.4], [0.8, 0.1, 0.2, 0.3]])
    paths = []
    for name, scores in (("tied.npz", tied), ("free.npz", free), ('odd&<name>".npz', tied)):
        np.savez(tmp_path / name, scores=scores)
        paths.append(str(tmp_path / name))
    expected = {paths[0]: ((1 / 2 + 1 / 3 + 1 / 4 + 1) / 4, 3 / 4),
                paths[1]: (3 / 4, 0.0), paths[2]: ((1 / 2 + 1 / 3 + 1 / 4 + 1) / 4, 3 / 4)}
    return paths, expected


def _top_tie_frequency(scores: np.ndarray) -> float:
    return float(np.mean((scores == scores.max(axis=1, keepdims=True)).sum(axis=1) > 1))


def test_junit_counts_and_failures_follow_the_checks(tmp_path):
    paths, expected = _dumps(tmp_path)
    for path, (_, freq) in expected.items():  # the hand-worked frequencies, once more
        assert _top_tie_frequency(np.load(path)["scores"]) == pytest.approx(freq)
    bound_min, bound_freq = 0.6, 0.10
    result = CliRunner().invoke(cli, ["check", *paths, "-m", "HR@1", "--min",
                                      f"HR@1={bound_min}", "--max-tie-frequency", "10%",
                                      "--format", "junit", "-q"])
    assert result.exit_code == 1, result.output
    root = ET.fromstring(result.stdout)
    assert schema_errors(root) == []
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == paths  # escaped and read back intact
    total = failed = 0
    for suite, path in zip(suites, paths):
        hr1, freq = expected[path]
        want = {"min HR@1": hr1 >= bound_min, "max_tie_frequency": freq <= bound_freq}
        cases = suite.findall("testcase")
        assert {c.get("name"): c.find("failure") is None for c in cases} == want
        assert int(suite.get("tests")) == len(want)
        assert int(suite.get("failures")) == sum(not ok for ok in want.values())
        for case in cases:
            assert case.get("classname") == path
            failure = case.find("failure")
            if failure is not None:
                assert failure.get("type") == case.get("name").split()[0]
                assert failure.get("message") and failure.get("message") in failure.text
        total += len(want)
        failed += sum(not ok for ok in want.values())
    assert (int(root.get("tests")), int(root.get("failures"))) == (total, failed)
    tied_min = suites[0].find("testcase[@name='min HR@1']/failure").get("message")
    assert f"{expected[paths[0]][0]:.4f}" in tied_min and "< min 0.6000" in tied_min


def test_junit_passing_dump_exits_0_and_holds_no_failure(tmp_path):
    paths, _ = _dumps(tmp_path)
    result = CliRunner().invoke(cli, ["check", paths[1], "--format", "junit", "-q"])
    assert result.exit_code == 0, result.output
    root = ET.fromstring(result.stdout)
    assert schema_errors(root) == []
    assert root.find(".//failure") is None and int(root.get("failures")) == 0
    assert int(root.get("tests")) == len(root.findall(".//testcase")) > 0


def test_junit_escapes_characters_xml_cannot_hold(tmp_path):
    """A control character in a path would make the whole report unreadable to a parser:
    the path is written as errors write it, the character as its Python escape."""
    name = "bell\x07.npz"
    np.savez(tmp_path / name, scores=np.array([[0.9, 0.8], [0.7, 0.1]]))
    result = CliRunner().invoke(cli, ["check", str(tmp_path / name), "-f", "junit", "-q"])
    assert result.exit_code == 0, result.output
    suite = ET.fromstring(result.stdout).find("testsuite")
    assert suite.get("name") == str(tmp_path / "bell") + "\\x07.npz"


def test_the_schema_check_finds_a_wrong_report():
    """The structural check above refuses what junit-10.xsd refuses (else it checks
    nothing)."""
    bad = ET.fromstring('<testsuites><testsuite name="a"><testcase classname="x">'
                        '<failure/></testcase><bogus/></testsuite></testsuites>')
    assert schema_errors(bad) == ["testsuite: missing ['errors', 'failures', 'tests']",
                                  "testcase: missing ['name']", "testsuite holds bogus"]


def _damaged(tmp_path) -> list[str]:
    """A dump cut short (half of a good one's bytes), one holding a NaN, an empty one."""
    whole = tmp_path / "whole.npz"
    np.savez(whole, scores=np.array([[0.9, 0.1], [0.4, 0.6]]))
    (tmp_path / "cut.npz").write_bytes(whole.read_bytes()[:200])
    np.savez(tmp_path / "nan.npz", scores=np.array([[0.9, np.nan], [0.4, 0.6]]))
    np.savez(tmp_path / "none.npz", scores=np.zeros((0, 2)))
    return [str(tmp_path / name) for name in ("cut.npz", "nan.npz", "none.npz")]


@pytest.mark.parametrize("at", [0, 1, 2])
def test_junit_reports_a_damaged_dump_as_an_error_and_the_others_as_alone(tmp_path, at):
    paths, _ = _dumps(tmp_path)
    good = paths[:2]
    args = ["-m", "HR@1", "--min", "HR@1=0.6", "--max-tie-frequency", "10%", "-f", "junit",
            "-q"]
    alone = {p: ET.fromstring(CliRunner().invoke(cli, ["check", p, *args]).stdout)
             .find("testsuite") for p in good}
    for bad in _damaged(tmp_path):
        files = list(good)
        files.insert(at, bad)
        result = CliRunner().invoke(cli, ["check", *files, *args])
        assert result.exit_code == 2, result.output  # an error wins over failed checks
        root = ET.fromstring(result.stdout)
        assert schema_errors(root) == []
        suites = root.findall("testsuite")
        assert [s.get("name") for s in suites] == files  # each dump in its place
        broken = suites[at]
        (case,) = broken.findall("testcase")
        (error,) = case.findall("error")
        assert case.get("name") == "read" and case.find("failure") is None
        assert error.get("message") == result.stderr.strip()[len("Error: "):]
        assert error.get("message").startswith(f"{bad}: ")
        assert (broken.get("tests"), broken.get("errors"), broken.get("failures")) == \
            ("1", "1", "0")
        for suite in suites[:at] + suites[at + 1:]:  # as when checked alone
            same = alone[suite.get("name")]
            suite.tail = same.tail = None  # the indentation after it
            assert ET.tostring(suite) == ET.tostring(same)
        cases = root.findall(".//testcase")
        assert int(root.get("tests")) == len(cases)
        assert int(root.get("errors")) == len(root.findall(".//error")) == 1
        assert int(root.get("failures")) == len(root.findall(".//failure")) == sum(
            int(s.get("failures")) for s in alone.values())
