"""Every tieeval command the README and the user guide show runs, and every output is real.

The README and every page of the guide (``docs/*.md``; the tests are parametrized over the
pages) show two kinds of example:

* ``$ tieeval ...`` blocks on the shipped ``sample_scores/``: the command is run here and its
  stdout must equal the block, line for line, on the platform the README's footers name
  (numpy's version and SIMD level decide the Original column's order among ties; elsewhere
  only the exit code and the shape of the output are checked);
* commands on the reader's own files (``runs/*/*.npz``, ``graded.parquet``, a TREC run ...):
  those files are built in a temporary directory and every such command must succeed there.

The key lists the guide gives for each command's ``--format json`` are checked against the
keys that command really prints, and every link between the pages names a heading.

What is not run: ``text`` blocks that do not start with ``$ tieeval``, lines of ``bash`` and
``yaml`` blocks that do not start with ``tieeval`` (``pip``, ``spark-submit`` ...), Python
blocks that use pyspark (they need a cluster; tests/engine/test_spark.py covers
tieeval.spark), and inline ``tieeval ...`` spans that name no file or hold ``...``.
"""

from __future__ import annotations

import glob
import importlib.util
import io
import json
import os
import re
import shlex
from contextlib import redirect_stdout

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from guide import PAGES, ROOT, read
from tiers import SLOW

import tieeval
from tieeval.cli import cli
from tieeval.records.results import environment

README = read("README.md")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.M | re.S)
TEXTS = {page: read(page) for page in PAGES}
BLOCKS = {page: [(m.group(1), m.group(2)) for m in FENCE.finditer(text)]
          for page, text in TEXTS.items()}
# Prose outside the fenced blocks, where inline code spans live.
PROSE = {page: FENCE.sub("", text) for page, text in TEXTS.items()}


def runner() -> CliRunner:
    try:  # click < 8.2 mixes stderr into the output unless told not to
        return CliRunner(mix_stderr=False)
    except TypeError:
        return CliRunner()


def readme_platform() -> tuple[str, str, str, str]:
    m = re.search(r"numpy (\S+) \((\w+), (\w+)\); its order among ties is\s+"
                  r"platform-dependent\. tieeval (\S+)\.", README)
    assert m, "the Quickstart output's footer names numpy, its SIMD level and the machine"
    return m.groups()


def this_platform() -> tuple[str, str, str, str]:
    env = environment()
    return env["numpy_version"], env["numpy_simd"], env["machine"], env["tieeval_version"]


def argsort_kernel(simd: str) -> str:
    """The family of numpy's float argsort kernel a SIMD level selects: every AVX-512 level
    from Skylake-X on (SKX, CLX, CNL, ICL, SPR) runs x86-simd-sort's AVX512_SKX argsort, so
    their orders among ties are the same; other levels are compared as they are named."""
    return "AVX512_SKX+" if simd in ("AVX512_SKX", "AVX512_CLX", "AVX512_CNL", "AVX512_ICL",
                                     "AVX512_SPR") else simd


def same_platform(shown, here) -> bool:
    (numpy_a, simd_a, machine_a, version_a), (numpy_b, simd_b, machine_b, version_b) = shown, here
    return ((numpy_a, machine_a, version_a) == (numpy_b, machine_b, version_b)
            and argsort_kernel(simd_a) == argsort_kernel(simd_b))


SAME_PLATFORM = same_platform(readme_platform(), this_platform())
SHOWN_SIMD, HERE_SIMD = readme_platform()[1], this_platform()[1]


def as_shown(text: str) -> str:
    """Real output with this machine's SIMD level spelled as the shown outputs spell theirs
    (the same argsort kernel: see argsort_kernel)."""
    if SHOWN_SIMD == HERE_SIMD:
        return text
    return text.replace(HERE_SIMD, SHOWN_SIMD).replace(HERE_SIMD.replace("_", "\\_"),
                                                       SHOWN_SIMD.replace("_", "\\_"))


# ---------------------------------------------------------------------------- the pages' examples

def shown_outputs(pages=PAGES) -> list[tuple[str, str, list[str]]]:
    """(page, command, output lines) of every ```text block that starts with ``$ tieeval``."""
    out = []
    for page in pages:
        for lang, body in BLOCKS[page]:
            lines = body.rstrip("\n").split("\n")
            if lang == "text" and lines[0].startswith("$ tieeval "):
                out.append((page, lines[0][2:], lines[1:]))
    return out


def example_commands(pages=PAGES) -> list[tuple[str, str]]:
    """(page, command) of every other tieeval command line: in bash / yaml blocks and inline
    code spans (and the one ``sample_scores/README.md`` shows)."""
    commands = []
    for page in pages:
        for lang, body in BLOCKS[page]:
            if lang not in ("bash", "yaml"):
                continue
            for line in body.splitlines():
                line = line.strip()
                if line.startswith("- run: "):
                    line = line[len("- run: "):]
                if line.startswith("tieeval "):
                    commands.append((page, line))
        for span in re.findall(r"`(tieeval [^`]+)`", PROSE[page]):
            span = " ".join(span.split())
            # Spans such as `tieeval compare ... | head -1` or `tieeval diff A B` are syntax,
            # not examples; an example names a file.
            if "..." not in span and re.search(r"\S+\.(npz|npy|parquet|csv|txt)\b", span):
                commands.append((page, span))
    with open(os.path.join(ROOT, "sample_scores", "README.md"), encoding="utf-8") as f:
        samples_readme = f.read()
    for lang, body in FENCE.findall(samples_readme):
        commands += [("sample_scores/README.md", line.strip()) for line in body.splitlines()
                     if lang == "bash" and line.startswith("tieeval ")]
    return commands


@pytest.mark.parametrize("pages", [["README.md"], ["docs/commands.md"]])
def test_every_command_shows_real_output(pages):
    """The README shows one real output per command, and so does the guide's commands page."""
    shown = [command.split()[1] for _, command, _ in shown_outputs(pages)]
    for name in cli.commands:
        assert name in shown, f"{pages[0]} shows no real output of tieeval {name}"


def test_the_pages_have_examples_to_check():
    assert len(example_commands(["README.md"])) >= 2
    assert len(example_commands()) >= 15
    assert len(shown_outputs()) >= 15
    pages = {page for page, _, _ in shown_outputs()} | {page for page, _ in example_commands()}
    assert {"README.md", "docs/getting-started.md", "docs/commands.md"} <= pages


def split_pipe(command: str) -> tuple[list[str], list[str] | None]:
    head, _, tail = command.partition(" | ")
    return shlex.split(head, comments=True), (shlex.split(tail) if tail else None)


def expand(args: list[str]) -> list[str]:
    """The shell's globbing, which CliRunner does not do (unmatched patterns stay literal)."""
    out = []
    for arg in args:
        matches = sorted(glob.glob(arg)) if any(c in arg for c in "*?[") else []
        out.extend(matches or [arg])
    return out


def invoke(command: str):
    argv, pipe = split_pipe(command)
    assert argv[0] == "tieeval", command
    result = runner().invoke(cli, expand(argv[1:]), catch_exceptions=False)
    return result, pipe


def jq(filter_args: list[str], text: str) -> list:
    """The subset of jq the pages use: ``jq -c '.a[0].b, .c'`` (paths separated by commas)."""
    assert filter_args[:2] == ["jq", "-c"] and len(filter_args) == 3, filter_args
    doc, values = json.loads(text), []
    for path in filter_args[2].split(","):
        value = doc
        for key, index in re.findall(r"\.(\w+)|\[(\d+)\]", path.strip()):
            value = value[key] if key else value[int(index)]
        values.append(value)
    return values


def strip(lines: list[str]) -> list[str]:
    lines = [line.rstrip() for line in lines]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def example_id(value) -> str:
    return value if isinstance(value, str) else ""


@pytest.mark.parametrize("page,command,shown", shown_outputs(), ids=example_id)
def test_shown_output_is_real(page, command, shown, monkeypatch):
    monkeypatch.chdir(ROOT)
    result, pipe = invoke(command)
    # The check and audit examples fail on purpose, and say so in their last lines (or in
    # the counts of GitHub's summary notice and of the JUnit report).
    failing = re.search(r"\b[1-9]\d* of \d+ (checks failed|claims flagged)|"
                        r"\b\d+ passed / [1-9]\d* failed|<testsuites [^>]*failures=\"[1-9]",
                        "\n".join(shown))
    assert result.exit_code == (1 if failing else 0), result.stderr
    if pipe and pipe[0] == "head":  # `| head -n N`: the first N lines
        count = int(pipe[pipe.index("-n") + 1])
        real = strip(as_shown(result.stdout).split("\n"))[:count]
        assert real == strip(shown) if SAME_PLATFORM else len(real) == len(strip(shown))
        return
    if pipe:  # compare the JSON values, not jq's spelling of floats
        real, shown = jq(pipe, as_shown(result.stdout)), [json.loads(line) for line in strip(shown)]
        assert real == shown if SAME_PLATFORM else len(real) == len(shown)
        return
    real = strip(as_shown(result.stdout).split("\n"))
    if SAME_PLATFORM:
        assert real == strip(shown)
    else:  # only the Original column (and what derives from it) may differ
        assert len(real) == len(strip(shown)) and real[0] == strip(shown)[0]


# ------------------------------------------------------------------------ the reader's own files

def list_table(**columns) -> pa.Table:
    return pa.table({name: pa.array([list(row) for row in rows], typ)
                     for name, (rows, typ) in columns.items()})


@pytest.fixture
def user_files(tmp_path, monkeypatch):
    """The files the pages' examples name, small and seeded, in a fresh working directory."""
    rng = np.random.default_rng(7)
    os.symlink(os.path.join(ROOT, "sample_scores"), tmp_path / "sample_scores")
    monkeypatch.chdir(tmp_path)

    def tied(n, m, dtype=np.float32):  # scores on a coarse grid, so rows have ties
        return (rng.integers(0, 6, size=(n, m)) / 5).astype(dtype)

    # Several methods x datasets x tasks x seeds, as the --template examples expect.
    for method, bump in (("ConsRec", 0.4), ("GroupIM", 0.0)):
        for dataset in ("Mafengwo", "CAMRa2011"):
            for seed in (1, 2, 3):
                scores = tied(40, 21)
                scores[:, 0] += np.float32(bump)
                os.makedirs(f"runs/{method}", exist_ok=True)
                tieeval.save_scores(f"runs/{method}/{dataset}_group_seed{seed}.npz", scores)

    tieeval.save_scores("scores.parquet", tied(60, 11))
    np.savez("scores.npz", scores=rng.random((60, 11)))  # float64: --cast float32 is a what-if
    os.makedirs("scores_dataset")
    for part in range(2):
        tieeval.save_scores(f"scores_dataset/part-{part:05d}.parquet", tied(30, 11))
    open("scores_dataset/_SUCCESS", "w").close()

    scores = tied(50, 20)
    graded = rng.integers(0, 5, size=scores.shape)
    graded[:, 0] = 4  # every row has a relevant item
    pq.write_table(list_table(scores=(scores, pa.list_(pa.float32())),
                              labels=(graded, pa.list_(pa.int64()))), "graded.parquet")
    np.savez("ratings.npz", scores=tied(50, 20), labels=graded)
    signed = rng.choice([-1, 0, 0, 1], size=scores.shape)
    signed[:, 0], signed[:, 1] = 1, -1  # positives and negatives in every row
    np.savez("signed.npz", scores=tied(50, 20), labels=signed)

    with open("run.txt", "w") as run, open("qrels.txt", "w") as qrels:
        for q in range(8):
            for d in range(12):
                run.write(f"q{q} Q0 d{d} {d + 1} {rng.integers(0, 4) / 2} sys\n")
                if d % 3 == 0:
                    qrels.write(f"q{q} 0 d{d} {rng.integers(0, 3)}\n")
            qrels.write(f"q{q} 0 d99 1\n")  # a relevant document the run did not retrieve
    # a score matrix and its labels in two .npy files (--labels)
    np.save("scores.npy", tied(50, 20))
    np.save("labels.npy", graded)
    return tmp_path


def spark_available() -> bool:
    return importlib.util.find_spec("pyspark") is not None


@pytest.mark.parametrize("page,command", example_commands(), ids=example_id)
def test_example_command_runs(page, command, user_files):
    argv, pipe = split_pipe(command)
    assert pipe is None, command
    spark = "--engine" in argv and argv[argv.index("--engine") + 1] == "spark"
    if spark:
        if not spark_available():
            # What the guide promises when pyspark is missing.
            result, _ = invoke(command)
            assert result.exit_code == 2
            assert ("Error: the Spark engine needs pyspark: pip install 'tieeval[spark]'"
                    in result.stderr)
            return
        import shutil
        if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
            pytest.skip("the Spark engine needs Java")
    rule = argv[argv.index("--original") + 1] if "--original" in argv else None
    if rule in ("topk", "topk-each") and importlib.util.find_spec("torch") is None:
        # What the guide promises when torch is missing.
        result, _ = invoke(command)
        assert result.exit_code == 2
        assert f"Error: --original {rule} needs torch (pip install 'tieeval[torch]')" \
            in result.stderr, result.stderr
        return
    result, _ = invoke(command)
    allowed = (0, 1) if argv[1] in ("check", "audit") else (0,)
    assert result.exit_code in allowed, (result.stdout, result.stderr)
    assert result.stdout.strip()
    fmt = argv[argv.index("--format") + 1] if "--format" in argv else "table"
    if fmt == "json":
        doc = json.loads(result.stdout)
        assert doc["tieeval_version"] == tieeval.__version__
        if "--both" in argv:
            assert all(run["relevance"]["subset"] == "both" for run in doc["runs"])
    if "--plot" in argv:
        assert os.path.getsize(argv[argv.index("--plot") + 1]) > 0
    if spark:  # the same output as the local engine
        local, _ = invoke(command.replace("--engine spark", "--engine local"))
        assert json.loads(result.stdout)["runs"] == json.loads(local.stdout)["runs"]


# ---------------------------------------------------------------------------- Python blocks

OPTIONAL_LIBRARIES = ("torch", "torchmetrics", "lightning", "recbole", "implicit")
# blocks that start a library taking seconds of CPU to import run in the slow tier
SLOW_BLOCKS = ("TieAwareMetric", "register_recbole")


def python_blocks() -> list[tuple[str, int, str]]:
    """(page, number on the page, code) of every Python block. The Spark driver script needs
    a cluster; tests/engine/test_spark.py covers tieeval.spark."""
    out = []
    for page in PAGES:
        blocks = [body for lang, body in BLOCKS[page] if lang == "python"]
        out += [(page, i + 1, body) for i, body in enumerate(blocks) if "pyspark" not in body]
    return out


def trailing_comments(block: str) -> list[str]:
    """The ``# ...`` lines ending a block: the output the block prints."""
    lines = block.rstrip("\n").split("\n")
    out = []
    while lines and lines[-1].startswith("# "):
        out.insert(0, lines.pop()[2:])
    return out


@pytest.mark.parametrize("page,number,block", [
    pytest.param(*b, marks=SLOW) if any(name in b[2] for name in SLOW_BLOCKS) else b
    for b in python_blocks()],
    ids=[f"{page} block {number}" for page, number, _ in python_blocks()])
def test_python_block_runs_and_prints_what_it_says(page, number, block, user_files):
    for extra in OPTIONAL_LIBRARIES:  # a block that needs an optional extra runs with it
        if re.search(rf"^\s*(import|from) {extra}\b", block, re.M):
            pytest.importorskip(extra)
    if "TieAwareMetric" in block:
        pytest.importorskip("torchmetrics")
    buffer = io.StringIO()
    with redirect_stdout(buffer):
        exec(compile(block, f"{page} python block {number}", "exec"), {})
    printed = strip(as_shown(buffer.getvalue()).split("\n"))
    expected = trailing_comments(block)
    if expected:
        if SAME_PLATFORM:
            assert printed == expected
        else:
            assert len(printed) == len(expected)


# ---------------------------------------------------------------------------- JSON key lists

def keys_and_strings(doc) -> set:
    """Every key, and every string value, of a JSON document."""
    found = set()
    if isinstance(doc, dict):
        for key, value in doc.items():
            found.add(key)
            found |= keys_and_strings(value)
    elif isinstance(doc, list):
        for value in doc:
            found |= keys_and_strings(value)
    elif isinstance(doc, str):
        found.add(doc)
    return found


def section(title: str) -> str:
    """From a heading to the next heading of level 2 or more, on the page that has it."""
    (text,) = [text for text in TEXTS.values() if re.search(f"^{re.escape(title)}", text, re.M)]
    start = re.search(f"^{re.escape(title)}", text, re.M).start()
    end = re.compile(r"^#{2,} ", re.M).search(text, start + len(title))
    return text[start:end.start() if end else None]


def between(text: str, start: str, end: str) -> str:
    i = text.index(start)
    return text[i:text.index(end, i + len(start))]


def named(text: str) -> set:
    """The JSON names a passage of the guide gives: quoted strings and backticked identifiers."""
    text = " ".join(text.split())
    quoted = set(re.findall(r'"([^"]+)"', text))
    backticked = set(re.findall(r"`([a-z_][a-z0-9_]*)`", text))
    return quoted | backticked


SAMPLES = ["sample_scores/sigmoid_saturated.parquet", "sample_scores/tie_free.parquet"]


def json_of(*args) -> dict:
    result = runner().invoke(cli, [*args, "--format", "json"], catch_exceptions=False)
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("title,start,end,args", [
    ("## `tieeval check`", '{"passed"', "plus the version fields",
     ["check", *SAMPLES]),
    ("## `tieeval diff`", "`--format json` (the contract)", "`--format csv`",
     ["diff", *SAMPLES, "-m", "HR@1"]),
    ("## `tieeval rank`", "`--format json` gives", "`--format csv`",
     ["rank", *SAMPLES, "-m", "HR@1"]),
    ("## `tieeval audit`", "`--format json` gives", "`csv` and `markdown`",
     ["audit", *SAMPLES, "--claims", "sample_scores/claims.csv"]),
])
def test_documented_json_keys_exist(title, start, end, args, monkeypatch):
    monkeypatch.chdir(ROOT)
    names = named(between(section(title), start, end))
    assert names
    missing = names - keys_and_strings(json_of(*args))
    assert not missing, f"{title}: {sorted(missing)} are not in the real JSON"


def test_documented_relevance_sources_and_subsets_exist(user_files):
    passage = between(section("## Labelled runs in JSON and CSV"), "`relevance.source`",
                      "Runs with item ids")
    names = named(passage) - {"relevance"}
    np.savez("positives.npz", scores=np.array([[0.5, 0.5, 0.1]] * 3, dtype=np.float32),
             positives=np.array([[0, 2], [1, -1], [2, -1]]))
    seen = set()
    for args in (["sample_scores/sigmoid_saturated.parquet", "-m", "Recall@10"],
                 ["signed.npz", "--both"], ["positives.npz"],
                 ["--qrels", "qrels.txt", "run.txt"]):
        for run in json_of("compare", *args, "-q")["runs"]:
            seen |= {run["relevance"]["source"], run["relevance"]["subset"]}
    assert names - {"subset"} == seen


def test_documented_data_warning_keys_exist(tmp_path, monkeypatch):
    passage = between(section("## Relevance labels, positives and negatives, item ids"),
                      '"data_warnings"', "(an empty list")
    names = named(passage)
    scores = np.random.default_rng(3).random((20, 6)).astype(np.float32)
    items = np.tile(np.arange(6), (20, 1))
    items[:5, 3] = items[:5, 0]  # the positive drawn again as a negative
    np.savez(tmp_path / "dup.npz", scores=scores, items=items)
    monkeypatch.chdir(tmp_path)
    doc = json_of("compare", "dup.npz", "-q")
    assert doc["runs"][0]["data_warnings"]
    assert not names - keys_and_strings(doc)


def test_documented_what_if_keys_exist(monkeypatch):
    monkeypatch.chdir(ROOT)
    passage = between(section("# What-if analyses"), "a `what_if` object", "in every run")
    names = named(passage) - {"what_if"}
    doc = json_of("compare", SAMPLES[1], "--cast", "bfloat16", "-m", "HR@1")
    assert set(doc["what_if"]) == names
    assert all(run["what_if"] == doc["what_if"] for run in doc["runs"])


def anchors(page: str) -> set:
    """The anchors of a page's headings, as GitHub spells them (mkdocs.yml spells them the
    same way: pymdownx.slugs)."""
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
            for heading in re.findall(r"^#+ (.+)$", PROSE[page], re.M)}


@pytest.mark.parametrize("page", PAGES)
def test_links_resolve(page):
    """Every relative link names a file, and every ``#anchor`` a heading of its page, so the
    links work on GitHub as on the built guide (where ``mkdocs build --strict`` checks them
    too)."""
    for target in re.findall(r"\]\(([^)\s]+)\)", PROSE[page]):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        linked = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
        assert os.path.exists(os.path.join(ROOT, linked)), (page, target)
        if anchor:
            assert linked in TEXTS, (page, target)
            assert anchor in anchors(linked), (page, target)
