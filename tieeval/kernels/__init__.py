"""Per-batch math: tie counts, the single-positive closed forms, the general kernel of
labelled rows, exact sums and the accumulators that hold them."""
