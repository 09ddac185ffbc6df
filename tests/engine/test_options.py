"""Options are one value: :class:`EvalOptions`, built from one declaration of the Python
API's keywords (:data:`KEYWORDS`). The public signatures and the command line's options
are checked against that declaration here, so that a new option is its declaration and
its use, and no function inside tieeval takes options one by one past 12 parameters."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path

import numpy as np
import pytest

import tieeval
from tieeval.cli.check import check as check_command
from tieeval.cli.common import RUN_OPTIONS
from tieeval.cli.compare import compare as compare_command
from tieeval.cli.diff import diff as diff_command
from tieeval.engine.arguments import REL_KEYWORDS
from tieeval.engine.local import ARRAY_KEYWORDS
from tieeval.engine.request import KEYWORDS, EvalOptions
from tieeval.errors import ParameterError
from tieeval.io.base import RelevanceReadOptions
from tieeval.metrics.options import RelOptions

PACKAGE = Path(tieeval.__file__).parent
MAX_PARAMETERS = 12
# user contracts, kept keyword for keyword: checked against KEYWORDS below
PUBLIC = {("engine/local.py", "evaluate"), ("engine/local.py", "evaluate_path"),
          ("engine/local.py", "evaluate_labels")}

# evaluate() takes arrays in memory: these keywords are about files and engines
FILE_ONLY = {"jobs", "engine", "options", "batch_rows", "qrels", "missing_queries",
             "judged_only", "labels", "spark_conf"}
# evaluate_labels() is the older, narrower spelling of evaluate(scores, labels=...)
NOT_IN_EVALUATE_LABELS = {"recall_norm", "precision_norm", "relevant_scores",
                          "relevance_level", "depth",
                          "original",
                          "run_labels", "relevance"}
# the labelled keywords whose RelOptions field is spelled otherwise
REL_FIELD_NAMES = {"gamma": "gammas", "log_base": "base"}
# the command line's names that differ from the declaration's
CLI_NAMES = {"k_values": "k", "meta": "run_labels"}
# declared keywords the command line spells as their parts
API_ONLY = {"relevance": "--gamma, --gain ... one by one",
            "what_if": "--cast / --tolerance",
            "labels": "the older name of run_labels (--meta)",
            "options": "the reader's fields one by one (--scores-column ...)"}
# each command's own options: what it does with the runs, not how they are evaluated
SHARED = {"files", "fmt", "output", "quiet", "progress"}
OWN = {
    "compare": SHARED | {"column", "no_summary", "table", "plot", "template", "seed_std",
                         "group_by_tag"},
    "check": SHARED | {"template", "group_by_tag", "max_change", "max_inflation",
                       "max_change_sigma", "max_spread", "max_tie_decided", "max_gap", "min",
                       "max_tie_frequency", "max_positive_tie_frequency"},
    "diff": SHARED | {"permutations", "seed", "confidence", "fail_if_worse"},
}
COMMANDS = {"compare": compare_command, "check": check_command, "diff": diff_command}
READER_FIELDS = {f.name for f in dataclasses.fields(RelevanceReadOptions)}
OUTPUTS = {"per_instance", "per_query", "paired", "cli"}


def parameter_count(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    a = node.args
    names = [*a.posonlyargs, *a.args, *a.kwonlyargs]
    count = len(names) + (a.vararg is not None) + (a.kwarg is not None)
    return count - (bool(names) and names[0].arg in ("self", "cls"))


def is_click_command(node) -> bool:
    """A command's callback: its parameters are the command line's options, checked
    against the declaration by test_cli_options_follow_the_declaration."""
    return any("command" in ast.unparse(d) for d in node.decorator_list)


def test_no_internal_function_takes_more_than_12_parameters():
    wide = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if (where, node.name) in PUBLIC or is_click_command(node):
                continue
            if parameter_count(node) > MAX_PARAMETERS:
                wide.append(f"{where}:{node.lineno} {node.name} ({parameter_count(node)})")
    assert not wide, ("functions taking more than 12 parameters (pass the options whole, "
                      "tieeval.engine.request.EvalOptions): " + ", ".join(wide))


def test_the_parameter_count_counts_what_a_caller_passes():
    tree = ast.parse("def f(a, /, b, *c, d, **e): pass\n"
                     "class C:\n    def m(self, x): pass\n    def s(y): pass")
    f, c = tree.body
    assert parameter_count(f) == 5
    assert [parameter_count(m) for m in c.body] == [1, 1]


def options_of(function, leave=()) -> dict:
    """The keywords of ``function`` but those in ``leave``, with their defaults."""
    return {name: p.default for name, p in inspect.signature(function).parameters.items()
            if name not in leave}


def same_default(a, b) -> bool:
    return type(a) is type(b) and a == b


def test_evaluate_path_takes_every_declared_keyword_with_its_default():
    got = options_of(tieeval.evaluate_path, leave=("path", "progress"))
    assert set(got) == set(KEYWORDS)
    wrong = [name for name, default in got.items()
             if not same_default(default, KEYWORDS[name].default)]
    assert not wrong, f"defaults that differ from KEYWORDS: {wrong}"


def test_evaluate_takes_the_declared_keywords_of_arrays():
    got = options_of(tieeval.evaluate, leave=(*ARRAY_KEYWORDS, "path"))
    assert set(got) == set(KEYWORDS) - FILE_ONLY
    assert all(same_default(default, KEYWORDS[name].default) for name, default in got.items())


def test_evaluate_labels_takes_the_declared_keywords_it_always_took():
    got = options_of(tieeval.evaluate_labels, leave=("scores", "labels", "offsets", "items",
                                                     "path"))
    assert set(got) == set(KEYWORDS) - FILE_ONLY - NOT_IN_EVALUATE_LABELS
    assert all(same_default(default, KEYWORDS[name].default) for name, default in got.items())
    # and it hands every one of them on to evaluate()
    assert set(inspect.signature(tieeval.evaluate_labels).parameters) <= set(
        inspect.signature(tieeval.evaluate).parameters)


def test_every_keyword_builds_a_field_and_every_field_has_a_keyword():
    fields = {f.name for f in dataclasses.fields(EvalOptions)}
    assert {k.field for k in KEYWORDS.values()} == fields - OUTPUTS
    rel_fields = {f.name for f in dataclasses.fields(RelOptions)}
    assert {REL_FIELD_NAMES.get(name, name) for name in REL_KEYWORDS} <= rel_fields
    assert all(KEYWORDS[name].field == "relevance" and KEYWORDS[name].default == default
               for name, default in REL_KEYWORDS.items())


# one value other than the default per keyword, with what it needs besides
SAMPLES = {
    "metrics": (["HR@1"], {}), "k": ([3], {}), "nan_policy": ("worst", {}),
    "jobs": (2, {}), "batch_rows": (10, {}), "relevance": (RelOptions(gain="exp"), {}),
    "gamma": (0.5, {}), "gain": ("exponential", {}), "discount": ("power", {}),
    "alpha": (2.0, {}), "log_base": (3.0, {}), "short_list": ("truncate", {}),
    "ap_norm": ("min", {}), "both": (True, {}), "no_relevant": ("zero", {}),
    "convention": ("trec_eval", {}), "recall_norm": ("min", {}),
    "precision_norm": ("micro", {}), "relevant_scores": ("positive", {}),
    "relevance_level": (2, {}), "depth": (5, {}),
    "what_if": (tieeval.WhatIf("float16"), {}), "cast": ("float16", {}),
    "tolerance": (1e-6, {}), "run_labels": ({"method": "x"}, {}),
    "labels": ({"method": "x"}, {}), "engine": ("spark", {}),
    "options": (tieeval.ReadOptions(scores="s"), {}), "qrels": ("qrels.txt", {}),
    "missing_queries": ("zero", {"qrels": "qrels.txt"}),
    "judged_only": (True, {"qrels": "qrels.txt"}), "original": ("stable", {}),
    "spark_conf": ({"spark.a": "1"}, {"engine": "spark"}),
}


def test_every_keyword_reaches_its_field():
    assert set(SAMPLES) == set(KEYWORDS)
    for name, (value, besides) in SAMPLES.items():
        field = KEYWORDS[name].field
        base = EvalOptions.from_keywords(**besides)
        got = EvalOptions.from_keywords(**besides, **{name: value})
        assert getattr(got, field) != getattr(base, field), name


def test_from_keywords_is_what_evaluate_path_checks(tmp_path):
    path = str(tmp_path / "run.npz")
    tieeval.save_scores(path, np.array([[1.0, 0.5], [0.2, 0.2]], dtype=np.float32))
    for bad in ({"k": 0}, {"gamma": -1}, {"engine": "dask"}, {"cast": "int3"},
                {"metrics": ["NDCG@x"]}, {"relevance": RelOptions(), "gain": "exp"},
                {"missing_queries": "zero"}, {"jobs": -1}, {"labels": [1, 2]}):
        with pytest.raises(ParameterError) as api:
            tieeval.evaluate_path(path, **bad)
        with pytest.raises(ParameterError) as value:
            EvalOptions.from_keywords(**bad)
        assert str(value.value) == str(api.value)
    with pytest.raises(TypeError, match="unexpected keyword argument 'gama'"):
        EvalOptions.from_keywords(gama=0.5)


def test_the_options_are_one_frozen_value():
    options = EvalOptions.from_keywords(k=[1, 5], gamma=[0, 1], cast="float16")
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.jobs = 3  # type: ignore[misc]
    assert options.relevance == RelOptions(gammas=(0.0, 1.0))
    assert options == EvalOptions.from_keywords(k=[1, 5], gamma=[0, 1], cast="float16")


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_cli_options_follow_the_declaration(command):
    """Every click option of compare / check / diff is a declared keyword (by its name or
    CLI_NAMES), a field of the reader's options (``--scores-column``: ``scores``), an
    output of the value, or one of the command's own; RUN_OPTIONS are value fields."""
    names = {p.name for p in COMMANDS[command].params}
    unknown = [name for name in sorted(names)
               if CLI_NAMES.get(name, name) not in KEYWORDS
               and name.removesuffix("_column") not in READER_FIELDS
               and name not in OUTPUTS and name not in OWN[command]]
    assert not unknown, (f"tieeval {command}: options neither declared in KEYWORDS nor the "
                         f"command's own: {unknown}")
    assert set(RUN_OPTIONS) <= names
    assert set(RUN_OPTIONS) <= {f.name for f in dataclasses.fields(EvalOptions)}


def test_every_declared_keyword_is_a_compare_option():
    names = {CLI_NAMES.get(p.name, p.name) for p in compare_command.params}
    missing = set(KEYWORDS) - set(API_ONLY) - names
    assert not missing, f"declared keywords without a compare option: {sorted(missing)}"
