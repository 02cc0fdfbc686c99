"""Jupyter kernels for renders, single or batched: the ``tracework`` kernelspec
(:mod:`.spec`), a kernel started ahead of the notebook that needs it (:mod:`.warm`), and a
kernel host that forks each kernel from a process that has imported tracework once
(:mod:`.host`).  Below the render and the batch, so that both start kernels the same way."""
