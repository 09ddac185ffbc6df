"""Run labels: --meta parsing, path templates and their errors, and source precedence."""

from __future__ import annotations

import json
import random
import re
import time

import numpy as np
import pytest
from click.testing import CliRunner

import tieeval
from tieeval.cli import cli
from tieeval.errors import InputError, ParameterError
from tieeval.records.run_labels import Template, TemplateError, parse_meta, resolve_labels

PAPER_TEMPLATE = "{method}/{dataset}_{task}_seed{seed}.npz"


def test_parse_meta():
    assert parse_meta(["method=ConsRec", "seed=1", "dataset=a=b"]) == {
        "method": "ConsRec", "seed": "1", "dataset": "a=b"}
    for bad, fragment in [("method", "expected KEY=VALUE"), ("=x", "expected KEY=VALUE"),
                          ("model=x", "unknown label 'model'"),
                          ("seed=", "label 'seed' needs a value")]:
        with pytest.raises(ParameterError, match=fragment):
            parse_meta([bad])
    with pytest.raises(ParameterError, match="given twice"):
        parse_meta(["seed=1", "seed=2"])


@pytest.mark.parametrize("path,expected", [
    ("runs/ConsRec/Mafengwo_group_seed1.npz",
     {"method": "ConsRec", "dataset": "Mafengwo", "task": "group", "seed": "1"}),
    ("/abs/deep/runs/ITR/CAMRa2011_user_seed42.npz",
     {"method": "ITR", "dataset": "CAMRa2011", "task": "user", "seed": "42"}),
    ("ConsRec/Mafengwo_group_seed1.npz",
     {"method": "ConsRec", "dataset": "Mafengwo", "task": "group", "seed": "1"}),
])
def test_template_matches_the_end_of_the_path(path, expected):
    assert Template.parse(PAPER_TEMPLATE).match(path) == expected


def test_template_does_not_match_across_folders_or_partial_names():
    t = Template.parse(PAPER_TEMPLATE)
    assert t.match("Mafengwo_group_seed1.npz") is None  # no method folder
    # matched against the end: the folder just above the file is the method
    assert t.match("runs/a/b/Mafengwo_group_seed1.npz")["method"] == "b"
    assert t.match("runs/M/Mafengwo_seed1.npz") is None  # no task
    assert t.match("runs/X/Mafengwo_group_seed1.parquet") is None
    assert t.match("runs/XConsRec/x_Mafengwo_group_seed1.npz")["dataset"] == "x"


def test_template_wildcards_and_literal_braces():
    t = Template.parse("{method}/*/{{v}}_{seed}.npz")
    assert t.match("r/M/anything/{v}_3.npz") == {"method": "M", "seed": "3"}
    assert t.match("M/a/b/{v}_3.npz") == {"method": "a", "seed": "3"}  # '*' is one folder
    assert t.match("M/{v}_3.npz") is None


def test_template_wildcards_take_as_little_as_they_can():
    # left to right, each field and '*' as short as the rest of the component allows
    assert Template.parse("{method}_{seed}.npz").match("a_b_c.npz") == {
        "method": "a", "seed": "b_c"}
    assert Template.parse("*_{method}_*.npz").match("x_y_z_w.npz") == {"method": "y"}
    assert Template.parse("*{method}.npz").match("abc.npz") == {"method": "abc"}
    assert Template.parse("{method}*.npz").match("abc.npz") == {"method": "a"}
    assert Template.parse("{method}*{seed}").match("abcd") == {"method": "a", "seed": "bcd"}
    assert Template.parse("{method}.npz").match(".npz") is None  # a field is never empty
    assert Template.parse("*{method}.npz").match("dir/.npz") is None


def _regex_oracle(template: str):
    """The template as a regular expression with lazy wildcards, for Python's ``re``.

    Used only on short names, where backtracking is cheap.
    """
    out = []
    for token in re.findall(r"\{\{|\}\}|\{[a-z]+\}|\*|[^{}*]", template):
        if token in ("{{", "}}"):
            out.append(re.escape(token[0]))
        elif token == "*":
            out.append("[^/]*?")
        elif token.startswith("{"):
            out.append(f"(?P<{token[1:-1]}>[^/]+?)")
        else:
            out.append(re.escape(token))
    return re.compile("(?:^|/)" + "".join(out) + "$")


def test_template_agrees_with_a_backtracking_regex_on_short_paths():
    rnd = random.Random(3)
    pieces = ["a", "b", "ab", "_", "/", "*", "{method}", "{seed}", "{task}", ".", "{{", "}}"]
    checked = matched = 0
    while checked < 1500:
        text = "".join(rnd.choice(pieces) for _ in range(rnd.randint(1, 7)))
        try:
            template = Template.parse(text)
        except TemplateError:
            continue
        oracle = _regex_oracle(text)
        checked += 1
        for _ in range(20):
            path = "".join(rnd.choice("ab_/.{}") for _ in range(rnd.randint(0, 12)))
            m = oracle.search(path)
            want = None if m is None else m.groupdict()
            assert template.match(path) == want, (text, path)
            matched += want is not None
    assert matched > 1000


@pytest.mark.parametrize("name", ["runs/" + "a" * 200, "a" * 196 + ".npy",
                                  "a" * 180 + "ab" * 8 + "xyz.npy", ("a" * 200 + "/") * 20])
def test_hostile_template_matches_in_linear_time(name):
    # Many '*' around one repeated letter: a backtracking regex tries O(n^8) splits of a
    # 200-character name before it gives up.
    t = Template.parse("*a*a*a*a*a*a*a*a*b{method}.npy")
    start = time.perf_counter()
    for _ in range(10):
        got = t.match(name)
    assert time.perf_counter() - start < 0.5
    # the eight a's come first, then the first 'b' (the second character of "ab" * 8);
    # the field, as short as it can be, still has to run to ".npy"
    assert got == ({"method": "ab" * 7 + "xyz"} if name.endswith("xyz.npy") else None)


@pytest.mark.parametrize("template,fragment", [
    ("", "template is empty"),
    ("{method/x.npz", "unclosed '{' at position 0"),
    ("{method}/x}.npz", "unmatched '}' at position 10"),
    ("{}/x.npz", "empty field '{}' at position 0"),
    ("{model}/x.npz", "unknown field {model}"),
    ("{method}/{method}.npz", "field {method} appears twice"),
    ("{method}{seed}.npz", "fields {method}{seed} touch"),
    ("runs/x.npz", "has no fields"),
])
def test_template_errors_are_pinned(template, fragment):
    with pytest.raises(TemplateError) as info:
        Template.parse(template)
    assert fragment in str(info.value)


def test_precedence_meta_then_template_then_metadata_then_file_name():
    t = Template.parse("{method}/{dataset}_s{seed}.npz")
    metadata = {"method": "FromFile", "dataset": "FileData", "task": "user", "seed": "9",
                "note": "not a label"}
    path = "runs/FromPath/PathData_s1.npz"
    assert resolve_labels(path, metadata, meta={"dataset": "Cli"}, template=t) == {
        "method": "FromPath", "dataset": "Cli", "task": "user", "seed": "1"}
    assert resolve_labels(path, metadata) == {
        "method": "FromFile", "dataset": "FileData", "task": "user", "seed": "9"}
    assert resolve_labels("runs/some.run.npz", {}) == {"method": "some.run"}
    with pytest.raises(InputError, match="does not match --template"):
        resolve_labels("other.npz", {}, template=t)


def _json(*args):
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_cli_labels_from_every_source(tmp_path):
    scores = np.ones((3, 4), dtype=np.float32)
    (tmp_path / "M").mkdir()
    meta_file = tmp_path / "M" / "D_group_seed1.npz"
    tieeval.save_scores(meta_file, scores, method="Stored", dataset="StoredData", task="user")
    bare = tmp_path / "bare_run.npy"
    np.save(bare, scores)

    doc = _json("compare", str(meta_file), "--format", "json")
    assert doc["runs"][0]["labels"] == {"method": "Stored", "dataset": "StoredData",
                                        "task": "user", "seed": None}
    doc = _json("compare", str(meta_file), "--template", "{method}/{dataset}_{task}_seed{seed}.npz",
                "--meta", "task=cli", "--format", "json")
    assert doc["runs"][0]["labels"] == {"method": "M", "dataset": "D", "task": "cli",
                                        "seed": "1"}
    doc = _json("compare", str(bare), "--format", "json")
    assert doc["runs"][0]["labels"] == {"method": "bare_run", "dataset": None, "task": None,
                                        "seed": None}


def test_cli_label_errors_exit_2(tmp_path):
    path = tmp_path / "x.npz"
    tieeval.save_scores(path, np.ones((2, 3), dtype=np.float32))
    runner = CliRunner()
    r = runner.invoke(cli, ["compare", str(path), "--template", "{method}_seed{seed}.npz"])
    assert r.exit_code == 2
    assert r.output.strip().splitlines() == [
        f"Error: {path}: does not match --template '{{method}}_seed{{seed}}.npz'"]
    r = runner.invoke(cli, ["compare", str(path), "--template", "{method"])
    assert r.exit_code == 2 and "unclosed '{'" in r.output
    r = runner.invoke(cli, ["compare", str(path), "--meta", "colour=red"])
    assert r.exit_code == 2 and "unknown label 'colour'" in r.output
    r = runner.invoke(cli, ["compare", str(path), "--meta", "seed=1", "--meta", "seed=2"])
    assert r.exit_code == 2 and "given twice" in r.output
