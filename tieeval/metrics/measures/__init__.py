"""Every measure tieeval computes, one module per family.

Each module holds a family's :class:`~tieeval.metrics.measures.base.Measure` objects: what
a measure needs from a row, its realised value for one ordering, its exact tie-aware
expectation and variance, the formula with a reference, and its names in every vocabulary
(:attr:`Measure.names`, keyed by :data:`VOCABULARIES`). :data:`MEASURES` lists them in the
order of ``--help`` and error messages; :mod:`tieeval.metrics.registry` registers them.

Adding a measure is one module here (its class and instance) plus its tests, and one line
in :data:`MEASURES`; CONTRIBUTING.md walks through an example.
"""

from tieeval.metrics.measures.ap import GMAP, MAP
from tieeval.metrics.measures.auc import AUC, V_AUC
from tieeval.metrics.measures.base import NEEDS, ORDERS, VOCABULARIES, Measure
from tieeval.metrics.measures.bpref import BPREF, GM_BPREF
from tieeval.metrics.measures.counts import (
    NUM_NONREL_JUDGED_RET,
    NUM_Q,
    NUM_REL,
    NUM_REL_RET,
    NUM_RET,
)
from tieeval.metrics.measures.dcg import DCG, NDCG, SDCG, SNDCG
from tieeval.metrics.measures.err import ERR
from tieeval.metrics.measures.gain import BING, G
from tieeval.metrics.measures.hr import HR, SUCCESS, TIE_DECIDED
from tieeval.metrics.measures.infap import INFAP
from tieeval.metrics.measures.iprec import IPREC, IPREC_11PT
from tieeval.metrics.measures.judged import JUDGED
from tieeval.metrics.measures.rbp import RBP, RBP_RESID
from tieeval.metrics.measures.rdcg import NDCG_REL, RNDCG
from tieeval.metrics.measures.recall import PRECISION, RECALL
from tieeval.metrics.measures.relative import RELATIVE_P
from tieeval.metrics.measures.rprec import RPREC, RPREC_MULT
from tieeval.metrics.measures.rr import MRR
from tieeval.metrics.measures.sets import SET_AP, SET_F, SET_P, SET_R, SET_REL_P, UTILITY
from tieeval.metrics.measures.signed import SHR, SRECALL
from tieeval.metrics.measures.unjudged import UNJUDGED

#: Every measure, in the order of ``--help`` and error messages.
MEASURES: tuple[Measure, ...] = (
    HR, RECALL, PRECISION, DCG, NDCG, MRR, MAP, SHR, SRECALL, SDCG, SNDCG, V_AUC, SUCCESS,
    RPREC, BPREF, JUDGED, NUM_RET, NUM_REL, NUM_REL_RET, NUM_Q, GMAP, ERR, IPREC, AUC,
    # trec_eval's measures, in its measure-table order
    INFAP, GM_BPREF, RPREC_MULT, UTILITY, IPREC_11PT, BING, G, NDCG_REL, RNDCG,
    RELATIVE_P, SET_P, SET_REL_P, SET_R, SET_AP, SET_F, NUM_NONREL_JUDGED_RET, RBP,
    RBP_RESID, UNJUDGED)

__all__ = ["MEASURES", "NEEDS", "ORDERS", "TIE_DECIDED", "VOCABULARIES", "Measure"]
