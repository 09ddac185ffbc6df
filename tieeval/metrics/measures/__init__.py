"""Every measure tieeval computes, one module per family.

Each module holds a family's :class:`~tieeval.metrics.measures.base.Measure` objects: what
a measure needs from a row, its realised value for one ordering, its exact tie-aware
expectation and variance, the formula with a reference, and its names in every vocabulary
(:attr:`Measure.names`, keyed by :data:`VOCABULARIES`). :data:`MEASURES` lists them in the
order of ``--help`` and error messages; :mod:`tieeval.metrics.registry` registers them.

Adding a measure is one module here (its class and instance) plus its tests, and one line
in :data:`ORDER` (and its names in :data:`KEYS`); CONTRIBUTING.md walks through an
example.
"""

from __future__ import annotations

import importlib
from typing import Any

from tieeval.metrics.measures.base import NEEDS, ORDERS, VOCABULARIES, Measure

# The modules load when a measure of theirs is first looked up, not with this package: a
# run asking for NDCG@10 imports dcg.py (and what it builds on), not the 18 families (the
# command line's start-up). MEASURES and TIE_DECIDED are attributes loaded on first use.

#: Every measure as (module, name in it), in the order of ``--help`` and error messages.
ORDER: tuple[tuple[str, str], ...] = (
    ("hr", "HR"), ("recall", "RECALL"), ("recall", "PRECISION"), ("dcg", "DCG"),
    ("dcg", "NDCG"), ("rr", "MRR"), ("ap", "MAP"), ("signed", "SHR"), ("signed", "SRECALL"),
    ("dcg", "SDCG"), ("dcg", "SNDCG"), ("auc", "V_AUC"), ("hr", "SUCCESS"),
    ("rprec", "RPREC"), ("bpref", "BPREF"), ("judged", "JUDGED"), ("counts", "NUM_RET"),
    ("counts", "NUM_REL"), ("counts", "NUM_REL_RET"), ("counts", "NUM_Q"), ("ap", "GMAP"),
    ("err", "ERR"), ("iprec", "IPREC"), ("auc", "AUC"), ("auc", "AUC_CUT"),
    # trec_eval's measures, in its measure-table order
    ("infap", "INFAP"), ("bpref", "GM_BPREF"), ("rprec", "RPREC_MULT"), ("sets", "UTILITY"),
    ("iprec", "IPREC_11PT"), ("gain", "BING"), ("gain", "G"), ("rdcg", "NDCG_REL"),
    ("rdcg", "RNDCG"), ("recall", "RELATIVE_P"), ("sets", "SET_P"), ("sets", "SET_REL_P"),
    ("sets", "SET_R"), ("sets", "SET_AP"), ("sets", "SET_F"),
    ("counts", "NUM_NONREL_JUDGED_RET"), ("rbp", "RBP"), ("rbp", "RBP_RESID"),
    ("judged", "UNJUDGED"))

#: The registry keys (:func:`tieeval.metrics.registry.key`: names, aliases and library
#: names) each module's measures register, so that a lookup imports only that module. It
#: only saves time: a key missing here loads every module (tests/metrics/test_registry_lazy.py
#: checks that it is complete and exact).
KEYS: dict[str, str] = {
    "hr": "HR HIT HITRATE HITRATIO SUCCESS",
    "recall": "RECALL R PRECISION P RELATIVEP",
    "dcg": "DCG NDCG SDCG SNDCG",
    "rr": "MRR RR RECIPRANK",
    "ap": "MAP AP AVERAGEPRECISION GMAP GMMAP",
    "signed": "SHR SRECALL",
    "auc": "VAUC AUC AUCCUT",
    "rprec": "RPREC RPRECISION RPRECMULT",
    "bpref": "BPREF GBPREF GMBPREF",
    "judged": "JUDGED UNJUDGED",
    "counts": "NUMRET NUMREL NUMRELRET NUMQ NUMNONRELJUDGEDRET",
    "err": "ERR",
    "iprec": "IPREC IPRECATRECALL IPREC11PT",
    "infap": "INFAP",
    "sets": "UTILITY SETP SETRELP SETR SETAP SETF",
    "gain": "BING NORMGAIN",
    "rdcg": "NDCGREL RNDCG",
    "rbp": "TRECRBP TRECRBPRESID",
}

#: registry key -> the module registering it (from :data:`KEYS`)
MODULE_OF_KEY = {k: module for module, keys in KEYS.items() for k in keys.split()}


def measures_of(module: str) -> list[Measure]:
    """The measures of one module of :data:`ORDER`, in that order (the module imported)."""
    loaded = importlib.import_module(f"{__name__}.{module}")
    return [getattr(loaded, name) for mod, name in ORDER if mod == module]


def __getattr__(name: str) -> Any:
    if name == "MEASURES":  # every measure, in the order of --help and error messages
        value: object = tuple(
            getattr(importlib.import_module(f"{__name__}.{module}"), attr)
            for module, attr in ORDER)
    elif name == "TIE_DECIDED":
        from tieeval.metrics.measures.hr import TIE_DECIDED as value
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


__all__ = ["KEYS", "MEASURES", "MODULE_OF_KEY", "NEEDS", "ORDER", "ORDERS", "TIE_DECIDED",
           "VOCABULARIES", "Measure", "measures_of"]
