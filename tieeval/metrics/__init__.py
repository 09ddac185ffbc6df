"""What a metric is: the registry of names, :class:`~tieeval.metrics.metric.Metric` values
parsed from ``"NDCG@10"``, and the run-wide options of labelled metrics."""
