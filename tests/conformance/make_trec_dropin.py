"""Write trec_eval 10's output, byte for byte, for the command lines of ``trec_dropin/``.

The oracle of ``tests/conformance/test_trec_dropin.py``: ``trec_dropin/cases.tsv`` names
each case (a qrels file, a run and trec_eval's options: ``-n``, measure parameters such as
``-m P.5,7`` or ``-m rbp.p=0.9``, with ``-q``, ``-c``, ``-J``, ``-M`` and ``-l``) on trec_eval's
own test files (``trec_eval_data/``) and the reference collections (``trec_reference/``);
``trec_dropin/<name>.txt`` is what the unchanged trec_eval 10 binary prints for it. Unlike
``make_trec_reference.py`` the values are not widened: the drop-in is checked byte for
byte, ``%6.4f`` included. CI has no trec_eval binary, so the committed outputs are the
oracle; the test also runs the binary when there is one (``TREC_EVAL`` or
``/work/bin/trec_eval``).

Regenerate (from the repository root)::

    python tests/conformance/make_trec_dropin.py --trec-eval /path/to/trec_eval
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "trec_dropin"


def cases() -> list[tuple[str, Path, Path, list[str]]]:
    """``(name, qrels, run, trec_eval's options)`` of every line of ``cases.tsv``."""
    out = []
    for line in (OUT / "cases.tsv").read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, qrels, run, options = line.split("\t")
        out.append((name, HERE / qrels, HERE / run, shlex.split(options)))
    return out


def trec_eval_output(binary: str | Path, qrels: Path, run: Path, options: list[str]) -> bytes:
    """trec_eval's stdout for ``options qrels run`` (it must succeed)."""
    return subprocess.run([str(binary), *options, str(qrels), str(run)], capture_output=True,
                          check=True).stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trec-eval", required=True, help="the trec_eval 10 binary")
    args = parser.parse_args()
    for name, qrels, run, options in cases():
        (OUT / f"{name}.txt").write_bytes(trec_eval_output(args.trec_eval, qrels, run, options))


if __name__ == "__main__":
    main()
