"""Plain records of the core layer: what flows between the layers, with no behaviour that
needs a reader, a kernel or the engine.

* :mod:`~tieeval.records.batch`: :class:`Batch` (rows of a dump) and :class:`RankLists`;
* :mod:`~tieeval.records.values`: :class:`InstanceValues`, one metric's per-instance values;
* :mod:`~tieeval.records.whatif`: the :class:`WhatIf` record of a precision what-if;
* the analysis results: :mod:`~tieeval.records.check` (gate outcomes),
  :mod:`~tieeval.records.diff` (paired comparisons and rankings),
  :mod:`~tieeval.records.audit` (claims and verdicts), :mod:`~tieeval.records.groups`
  (seed groups), :mod:`~tieeval.records.paper` (the paper's tables and figure) and
  :mod:`~tieeval.records.trec_eval` (trec_eval lines);
* :mod:`~tieeval.records.runs`: :class:`RunTables`, evaluated runs as ``compare`` and
  ``ties`` show them.

* :mod:`~tieeval.records.results`: a run's own result, :class:`RunResult` with its
  :class:`MetricRow` and :class:`TieStats` (the JSON contract; also importable as
  ``tieeval.results``), and :mod:`~tieeval.records.run_labels`, the labels of a run
  (method / dataset / task / seed).

The renderers (:mod:`tieeval.report`) import these records and nothing that computes them;
the records import no renderer (a notebook's HTML is registered with
:mod:`~tieeval.records.display` by the rendering layer).
"""
