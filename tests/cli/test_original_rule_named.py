"""Every output of every command names the ranking rule behind its Original column.

Three kinds of run, each evaluated by a different rule: plain dumps (``np.argsort``), dumps
carrying their codebase's ranking under ``--original given``, and TREC runs (trec_eval's
order). Every command in every format must name that rule -- and never another one: a
table titled ``np.argsort`` above the saved ranking's numbers is the defect this guards.
"""

from __future__ import annotations

import csv
import html
import io
import json

import numpy as np
import pytest
from click.testing import CliRunner

from tieeval import save_scores
from tieeval.cli import cli

METRIC = "NDCG@3"
RUN_A = """q1 Q0 d1 1 0.9 sys
q1 Q0 d2 2 0.5 sys
q1 Q0 d3 3 0.5 sys
q1 Q0 d4 4 0.1 sys
q2 Q0 a 1 2 sys
q2 Q0 b 2 2.0 sys
q3 Q0 x 1 1 sys
q3 Q0 y 2 1 sys
"""
RUN_B = """q1 Q0 d2 1 0.7 sys
q1 Q0 d4 2 0.7 sys
q1 Q0 d1 3 0.2 sys
q2 Q0 b 1 3 sys
q2 Q0 a 2 1 sys
q3 Q0 y 1 4 sys
q3 Q0 x 2 4 sys
"""
QRELS = """q1 0 d2 1
q1 0 d4 2
q2 0 b 1
q3 0 y 1
"""


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    """Per rule: the two runs, the options every command takes, and the claims file."""
    root = tmp_path_factory.mktemp("rules")
    rng = np.random.default_rng(7)
    out = {}
    for rule in ("argsort", "given"):
        paths = []
        for name in ("A", "B"):
            s = rng.integers(0, 3, (40, 6)).astype(np.float32)
            ranking = np.argsort(-s, axis=1, kind="stable") if rule == "given" else None
            path = root / f"{rule}_{name}.npz"
            save_scores(path, s, ranking=ranking)
            paths.append(str(path))
        options = ["--original", "given"] if rule == "given" else []
        out[rule] = (paths, options)
    paths = []
    for name, text in (("A", RUN_A), ("B", RUN_B)):
        path = root / f"trec_{name}.txt"
        path.write_text(text)
        paths.append(str(path))
    (root / "qrels.txt").write_text(QRELS)
    out["trec"] = (paths, ["--qrels", str(root / "qrels.txt")])
    claims = {}
    for rule in out:  # the runs' methods are their file names
        claims[rule] = root / f"claims_{rule}.csv"
        claims[rule].write_text(f"method,dataset,task,metric,k,value\n{rule}_A,d,,NDCG,3,0.5\n"
                                f"{rule}_B,d,,NDCG,3,0.4\n")
    return out, claims


def run(args):
    res = CliRunner().invoke(cli, [str(a) for a in args])
    assert res.exit_code in (0, 1), res.output  # 1: a check failed / a claim flagged
    assert "Traceback" not in res.output
    return res.stdout


def names_rule(text: str, rule: str) -> None:
    """The text names ``rule`` in words and no other rule."""
    flat = " ".join(text.replace("\\", "").split())  # tables wrap; Markdown escapes
    words = {"argsort": "np.argsort(scores * -1)",
             "given": "the ranking the dump carries",
             "trec": "trec_eval's order (score, then docno, descending)"}
    assert words[rule] in flat, flat[-600:]
    for other, phrase in words.items():
        if other != rule:
            assert phrase not in flat, (rule, other, flat[-600:])
    if rule == "given":
        assert "--original given" in flat


def csv_rules(text: str) -> set[str]:
    return {row["original_rule"] for row in csv.DictReader(io.StringIO(text))}


def json_rules(doc, where) -> set:
    """Every ``original_rule`` that ``where`` finds in the document."""
    return set(where(doc))


# Per command: the arguments after the runs, the formats, and for JSON where the rule is.
def _runs_rules(rule):
    # compare's run JSON names the rule only when it is not the dump's default
    default = "trec" if rule == "trec" else "argsort"
    return lambda d: [r.get("original_rule", default) for r in d["runs"]]


COMMANDS = {
    "compare": (["-m", METRIC], ("table", "markdown", "latex", "csv", "json", "html")),
    "compare3": (["-m", METRIC, "--table", "3", "--meta", "dataset=d"],
                 ("table", "markdown", "latex", "csv", "html")),
    "ties": (["-m", METRIC], ("json",)),  # Table 4 shows no Original column otherwise
    "check": (["-m", METRIC, "--max-change", f"{METRIC}=100%"],
              ("text", "github", "json", "junit")),
    "diff": (["-m", METRIC], ("table", "markdown", "csv", "json")),
    "rank": (["-m", METRIC, "--meta", "dataset=d"], ("table", "markdown", "csv", "json")),
    "audit": (["--meta", "dataset=d"], ("table", "markdown", "csv", "json")),
}
JSON_RULES = {
    "check": lambda d: [c["original_rule"] for c in d["checks"]],
    "diff": lambda d: [d["original_rule"], d["a"]["original_rule"], d["b"]["original_rule"]],
    "rank": lambda d: [m["original_rule"] for r in d["rankings"] for m in r["methods"]],
    "audit": lambda d: [c["original_rule"] for c in d["claims"]],
}


@pytest.mark.parametrize("rule", ["argsort", "given", "trec"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_output_names_the_original_rule(cases, rule, command):
    by_rule, claims = cases
    paths, options = by_rule[rule]
    extra, formats = COMMANDS[command]
    name = "compare" if command == "compare3" else command
    if command == "audit":
        extra = extra + ["--claims", claims[rule]]
    for fmt in formats:
        text = run([name, *paths, *extra, *options, "-f", fmt])
        if fmt == "junit":  # a testsuite property per dump
            import xml.etree.ElementTree as ET
            found = {p.get("value") for p in ET.fromstring(text).iter("property")
                     if p.get("name") == "original_rule"}
            assert found == {rule}, (command, fmt)
        elif fmt == "json":
            doc = json.loads(text)
            where = JSON_RULES.get(name, _runs_rules(rule))
            assert json_rules(doc, where) == {rule}, (command, fmt)
        elif fmt == "csv":
            assert csv_rules(text) == {rule}, (command, fmt)
        elif fmt == "html":  # the page's text, its entities read
            names_rule(html.unescape(text), rule)
        else:
            names_rule(text, rule)


# Formats with no Original column to name: Table 4 (ties) and trec_eval's measure lines.
NO_ORIGINAL = {("ties", f) for f in ("table", "csv", "markdown", "latex")} | {
    ("runs", "trec_eval")}


def test_every_registered_format_is_in_the_matrix():
    # a format added later must join the matrix above, or say it shows no Original
    from tieeval.report.registry import formats
    covered = {(name, fmt) for command, (_, fmts) in COMMANDS.items() for fmt in fmts
               for name in [{"compare": "runs", "compare3": "runs"}.get(command, command)]}
    for kind in ("runs", "ties", "check", "diff", "rank", "audit"):
        for fmt in formats(kind):
            assert (kind, fmt) in covered | NO_ORIGINAL, (kind, fmt)


def test_trec_eval_format_has_no_place_for_the_rule_and_claims_none(cases):
    # trec_eval's text is measure/qid/value lines only; it must stay a drop-in
    by_rule, _ = cases
    paths, options = by_rule["trec"]
    text = run(["compare", paths[0], *options, "-m", METRIC, "-f", "trec_eval"])
    assert text and all(len(line.split("\t")) == 3 for line in text.splitlines())


def test_diff_original_title_names_the_saved_ranking_not_argsort(cases):
    by_rule, _ = cases
    paths, options = by_rule["given"]
    text = run(["diff", *paths, *options, "-m", METRIC])
    titles = [line.strip() for line in text.splitlines() if line.strip().startswith("Original")]
    assert titles == ["Original (--original given: the ranking the dump carries (its "
                      "'ranking' field))"]
    paths, options = by_rule["trec"]
    text = run(["diff", *paths, *options, "-m", METRIC])
    titles = [line.strip() for line in text.splitlines() if line.strip().startswith("Original")]
    assert titles == ["Original (trec_eval's order (score, then docno, descending))"]
