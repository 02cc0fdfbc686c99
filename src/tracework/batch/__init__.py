"""``tracework rerender``: many reports at new commits (:mod:`.rerender`), in worker
processes with warm kernels (:mod:`.kernels`) forked by a kernel host (:mod:`.kernel_host`)."""
