"""Plain records of the core layer: what flows between the layers, with no behaviour that
needs a reader, a kernel or the engine: a dump's batches (:mod:`~tieeval.records.batch`),
one metric's per-instance values (:mod:`~tieeval.records.values`), a run's own result
(:mod:`~tieeval.records.results`, the JSON contract; also importable as ``tieeval.results``)
and labels (:mod:`~tieeval.records.run_labels`), and the results of every analysis.

The renderers (:mod:`tieeval.report`) import these records and nothing that computes them;
the records import no renderer (a notebook's HTML is registered with
:mod:`~tieeval.records.display` by the rendering layer).
"""
