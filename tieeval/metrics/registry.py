"""The one registry of metric names: what ``--metric`` accepts, its ``--help`` and its errors.

Every measure of :data:`tieeval.metrics.measures.MEASURES` (one module per family, with its
math and its names in other tools' vocabularies) is registered here, whatever protocol it is
evaluated under:
the single held-out positive (:mod:`tieeval.kernels.closed_forms`, sort-free closed forms) or
labelled rows with many positives, graded gains and explicit negatives
(:mod:`tieeval.kernels.tie_blocks`). ``Metric.parse`` and ``parse_rel_metric`` both look
names up here, so help text, error messages and accepted spellings cannot drift apart.

Names are matched case-insensitively with ``-`` and ``_`` ignored: ``V-AUC``, ``vauc`` and
``v_auc`` are one metric, and it prints back as its canonical name ``V-AUC``. trec_eval's and
ir_measures' spellings (``ndcg_cut_10``, ``P.5,10``, ``recip_rank``, ``nDCG@10``) are
translated to these names by :mod:`tieeval.metrics.spellings`.
"""


from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, TypeVar, cast, overload

import numpy as np

from tieeval.errors import ParameterError
from tieeval.metrics.measures import MODULE_OF_KEY, ORDER, Measure, measures_of

if TYPE_CHECKING:
    from _collections_abc import dict_items, dict_keys, dict_values

_T = TypeVar("_T")

CUTOFFS = ("required", "optional", "none", "level")
AGGREGATES = ("mean", "sum", "geometric")
MIN_GEO_MEAN = 1e-5
"""The floor of a per-row value before its logarithm in a geometric mean (trec_eval's
``MIN_GEO_MEAN``, m_gm_map.c), so a zero AP does not send the mean to 0."""


#: A metric's definition and math (:class:`tieeval.metrics.measures.base.Measure`); the
#: name it had before measures carried their math.
MetricSpec = Measure


_KEYS: dict[str, str] = {}  # name -> key, for the names already seen (a measure's spec is looked
#                  up per metric per batch)


def key(name: str) -> str:
    """The lookup key of a name: upper case, ``-`` and ``_`` removed."""
    k = _KEYS.get(name) if isinstance(name, str) else None
    if k is None:
        k = name.upper().replace("-", "").replace("_", "")
        if len(_KEYS) < 4096:
            _KEYS[name] = k
    return k


_MISSING = object()


class Registry(dict[str, Measure]):
    """``{key: MetricSpec}`` that also answers to any spelling of a name or alias.

    It fills as names are looked up: a name's module
    (:data:`~tieeval.metrics.measures.MODULE_OF_KEY`) is imported and its measures
    registered then, so that a run asking for NDCG@10 does not import every family. A name
    no module is indexed under, and any iteration, registers every measure first, in the
    order of :data:`~tieeval.metrics.measures.ORDER` (what ``--help`` lists)."""

    def __getitem__(self, name: str) -> Measure:
        value = self.get(name, _MISSING)
        if value is _MISSING:
            raise KeyError(key(name))
        return cast(Measure, value)  # not the sentinel: a registered measure

    @overload
    def get(self, name: object, default: None = None) -> Measure | None: ...

    @overload
    def get(self, name: object, default: _T) -> Measure | _T: ...

    def get(self, name: object, default: object = None) -> object:
        if not isinstance(name, str):
            return default
        k = key(name)
        value = super().get(k, _MISSING)
        if value is _MISSING:
            _find(k)
            value = super().get(k, default)
        return value

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name, _MISSING) is not _MISSING

    def names_measure(self, name: object) -> bool:
        """``name in self``, without registering every measure for a name that no module
        is indexed under (``official``, a trec_eval list): the index of every built-in
        key is complete (tests/metrics/test_registry_lazy.py), and a measure registered from
        elsewhere is in the registry already."""
        if not isinstance(name, str):
            return False
        k = key(name)
        if not (dict.__contains__(self, k) or k in MODULE_OF_KEY):
            return False
        return name in self

    def __iter__(self) -> Iterator[str]:
        load_all()
        return super().__iter__()

    def __len__(self) -> int:
        load_all()
        return super().__len__()

    def keys(self) -> dict_keys[str, Measure]:
        load_all()
        return super().keys()

    def values(self) -> dict_values[str, Measure]:
        load_all()
        return super().values()

    def items(self) -> dict_items[str, Measure]:
        load_all()
        return super().items()


REGISTRY: Registry = Registry()
_LOCK = threading.RLock()  # a lookup that misses waits for a registration under way
_LOADED: set[str] = set()
_COMPLETE = False


#: The vocabularies of :attr:`Measure.names` whose names are accepted as they are
#: (``HitRatio@10``, ``RecipRank@10``, ``hit_rate@10``): a library's class or config name
#: with tieeval's ``@K``. trec_eval's and ir_measures' names have a parameter syntax of
#: their own and are translated by :mod:`tieeval.metrics.spellings`. A name only names the
#: measure; the library's definition of it is set by its convention (``--convention``).
LIBRARY_VOCABULARIES = ("RecBole", "LensKit", "Cornac", "ranx")


def register(spec: MetricSpec) -> MetricSpec:
    if spec.cutoff not in CUTOFFS:
        raise ValueError(f"cutoff must be one of {CUTOFFS}")
    if spec.aggregate not in AGGREGATES:
        raise ValueError(f"aggregate must be one of {AGGREGATES}")
    for name in (spec.name, *spec.aliases):
        dict.__setitem__(REGISTRY, key(name), spec)
    for vocabulary in LIBRARY_VOCABULARIES:
        for name in spec.names_in(vocabulary):
            taken = dict.get(REGISTRY, key(name))
            if taken is not None and taken is not spec:
                raise ValueError(f"{vocabulary}'s {name!r} names both {taken.name} and "
                                 f"{spec.name}")
            dict.__setitem__(REGISTRY, key(name), spec)
    return spec


def _find(k: str) -> None:
    """Register the measures that may be named by key ``k``: its module's, or every one."""
    with _LOCK:
        if _COMPLETE or dict.__contains__(REGISTRY, k):
            return
        module = MODULE_OF_KEY.get(k)
        if module is not None and module not in _LOADED:
            _LOADED.add(module)
            for spec in measures_of(module):
                register(spec)
        if not dict.__contains__(REGISTRY, k):
            load_all()


def load_all() -> None:
    """Register every measure, in :data:`~tieeval.metrics.measures.ORDER` (the order of
    ``--help`` and error messages), then the measures registered from elsewhere as they
    came: the registry then iterates as if every measure had been registered at import."""
    global _COMPLETE
    with _LOCK:
        if _COMPLETE:
            return
        from tieeval.metrics.measures import MEASURES
        builtin = {id(spec) for spec in MEASURES}
        others = [spec for spec in dict.fromkeys(dict.values(REGISTRY))
                  if id(spec) not in builtin]
        dict.clear(REGISTRY)  # a lookup meanwhile waits on the lock (Registry.get)
        for spec in (*MEASURES, *others):
            register(spec)
        _LOADED.update(module for module, _ in ORDER)
        _COMPLETE = True


def metric_names() -> list[str]:
    """Canonical names in registry order (for help text and error messages)."""
    return list(dict.fromkeys(spec.name for spec in REGISTRY.values()))


def signed_names() -> list[str]:
    """The metrics whose value depends on gamma (SHR, SRecall, SDCG, SNDCG)."""
    return [name for name in metric_names() if REGISTRY[name].signed]


def aliases() -> list[str]:
    return [a for spec in dict.fromkeys(REGISTRY.values()) for a in spec.aliases]


def names_text() -> str:
    """``"HR, Recall, ... (aliases: HIT, ...)"``: what error messages offer (with the other
    tools' spellings: :func:`tieeval.metrics.spellings.choices_text`)."""
    return ", ".join(metric_names()) + " (aliases: " + ", ".join(aliases()) + ")"


def library_names() -> list[str]:
    """Every name of :data:`LIBRARY_VOCABULARIES` the registry accepts, in registry order."""
    return list(dict.fromkeys(n for spec in dict.fromkeys(REGISTRY.values())
                              for v in LIBRARY_VOCABULARIES for n in spec.names_in(v)))


def lookup(name: object, text: object = None, choices: Callable[[], str] = names_text,
           hint: Callable[[object, object], str] | None = None) -> MetricSpec:
    """The spec of ``name`` (any spelling), or a ParameterError: ``hint(name, text)`` says
    what to write instead (:func:`tieeval.metrics.spellings.unknown_hint`: the closest
    names); without one, ``choices()`` lists every name."""
    spec = REGISTRY.get(name) if isinstance(name, str) else None
    if spec is None:
        where = f" in {text!r}" if text is not None and text != name else ""
        tail = hint(name, text) if hint is not None else f"choose from {choices()}"
        raise ParameterError(f"unknown metric {name!r}{where}; {tail}")
    return spec


MAX_K = 2 ** 62


def check_k(k: object, name: str = "K") -> int:
    """Validate a cutoff: an int >= 1 (bool and non-integral values are refused); ``name``
    is what the messages call it."""
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
        raise ParameterError(f"{name} must be a whole number >= 1, got {k!r}")
    if k < 1:
        raise ParameterError(f"{name} must be >= 1, got {k}")
    if k > MAX_K:
        # Cutoffs are int64 in the kernels; any K past a row's length acts as its length.
        raise ParameterError(f"{name} must be at most 2**62 = {MAX_K}, got {k}")
    return int(k)


def parse_gamma(text: str) -> float:
    """A signed metric's penalty written as text: a finite number >= 0."""
    try:
        gamma = float(text)
    except ValueError:
        gamma = math.nan
    if not math.isfinite(gamma) or gamma < 0:
        raise ParameterError(f"gamma must be a finite number >= 0, got {text!r}")
    return gamma


def check_level(x: object, upper: float = 1.0) -> float:
    """Validate a level: a number in [0, ``upper``] (bool refused); ``upper`` is 1 for a
    recall level, infinite for trec_eval's multiples of R (``Rprec_mult``)."""
    if upper == 1.0:
        what = "recall level must be a number in [0, 1]"
    else:
        what = "level must be a number >= 0" + ("" if math.isinf(upper) else f" and <= {upper:g}")
    if isinstance(x, str):
        try:
            x = float(x)
        except ValueError:
            raise ParameterError(f"{what}, got {x!r}") from None
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer,
                                                               np.floating)):
        raise ParameterError(f"{what}, got {x!r}")
    level = float(x)
    if not 0.0 <= level <= upper:  # NaN fails too
        raise ParameterError(f"{what}, got {x!r}")
    return level


def parameter_text(k: int | float | None) -> str:
    """How a metric's parameter prints after ``@``: ``10``, ``0.1``, and ``1`` for 1.0."""
    if isinstance(k, float):
        text = repr(k)
        return text[:-2] if text.endswith(".0") else text
    return str(k)


#: The text after ``@`` that names the whole list (``NDCG@all``: NDCG, untruncated).
WHOLE_LIST = "all"


def parse_parameter(spec: MetricSpec, text: str, whole: str) -> int | float | None:
    """The text after ``@`` of ``whole``: a cutoff, or a recall level for level metrics;
    ``all`` (:data:`WHOLE_LIST`) is no cutoff, for a metric whose cutoff is optional
    (``NDCG@all`` is ``NDCG``, which ``-m NDCG --k 10`` would cut at 10)."""
    if spec.takes_level:
        return check_level(text, spec.level_max)
    if text.lower() == WHOLE_LIST:
        if spec.cutoff != "optional":
            raise ParameterError(f"{spec.name} has no untruncated form ({whole!r}); "
                                 + (f"give a cutoff, e.g. {spec.name}@10"
                                    if spec.cutoff == "required" else f"write {spec.name}"))
        return None
    try:
        return int(text)
    except ValueError:
        raise ParameterError(f"cutoff in {whole!r} must be a whole number >= 1") from None


def check_cutoff(spec: MetricSpec, k: object) -> int | float | None:
    """``k`` validated against the spec's cutoff rule (None where the metric allows it);
    a level metric's parameter is a float in [0, 1]."""
    if spec.takes_level:
        if k is None:
            raise ParameterError(f"{spec.name} needs a recall level, e.g. {spec.name}@0.1")
        return check_level(k, spec.level_max)
    if spec.cutoff == "required" and k is None:
        raise ParameterError(f"{spec.name} needs a cutoff, e.g. {spec.name}@10")
    if spec.cutoff == "none" and k is not None:
        raise ParameterError(f"{spec.name} takes no cutoff (got {spec.name}@{k})")
    return None if k is None else check_k(k)
