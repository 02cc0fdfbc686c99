"""``tracework rerender``: many reports at new commits (:mod:`.rerender`), in worker
processes that each keep a warm kernel (:mod:`tracework.kernels`), and what a batch
says changed (:mod:`.findings`)."""
