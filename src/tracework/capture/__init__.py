"""Runtime captures: the subject's own code run under an analyst's harness, isolated.

The stages, one module each, in the order ``tracework capture`` runs them
(:mod:`.pipeline` reads as that order):

- :mod:`.config` — ``captures/NAME.toml``, every key checked;
- :mod:`.tree` — the subject's tree at the commit, by ``git archive`` into the cache;
- :mod:`.preflight` — the register's files hash-checked in that tree before anything runs;
- :mod:`.environment` — the subject's locked dependencies, installed once by uv, cached;
- :mod:`.isolation` and :mod:`.sandbox_init` — the sandbox, by bubblewrap or by unshare;
- :mod:`.process` — one sandboxed run: its pipes, limits, clock and end;
- :mod:`.protocol` — the messages the harness sends, checked one by one;
- :mod:`.normalise` — volatile values made stable;
- :mod:`.store` — the capture folder as frozen models: ``load_capture``, ``verify_capture``.

``harness/`` holds what runs inside the sandbox, standard library only: the harness API
``tracework_harness`` and its runner.  Errors are in :mod:`.errors`, under
:class:`tracework.errors.TraceworkError`.
"""
