"""A TREC run (``qid Q0 docno rank score tag``), read with its qrels, whatever its name
(:mod:`tieeval.io.trec_stream`)."""

from __future__ import annotations

from tieeval.io.readers import Reader


def open_trec(path, options):
    from tieeval.io.trec_stream import open_trec_run
    return open_trec_run(path, options.qrels, options)


READER = Reader("trec", "TREC run", open_trec, chosen_by="qrels",
                carries=frozenset({"labels", "ids"}), order=4)
