"""Drive a dump's batches through the kernel chosen for it into one mergeable accumulator:
in this process (:mod:`~tieeval.engine.local`), in worker processes
(:mod:`~tieeval.engine.parallel`) or on Spark (:mod:`~tieeval.engine.spark`)."""
