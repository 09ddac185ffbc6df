"""Small helpers every layer may use, importing only the standard library and numpy: the
positions of ranges laid end to end (:mod:`~tieeval.util.ranges`), C functions Python does
not expose (:mod:`~tieeval.util.libc`), the stop token of long computations
(:mod:`~tieeval.util.stopping`) and the one escaping of user text for every output
(:mod:`~tieeval.util.escaping`)."""
