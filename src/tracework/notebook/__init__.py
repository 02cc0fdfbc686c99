"""The analyst's notebook: ``tw.open()`` and the workbench (:mod:`.workbench`, the facade),
declaring records (:mod:`.declare`; the kinds are in :mod:`tracework.records`), the register
opened at a commit and quoting in it (:mod:`.session`, writing a cell's quotes in
:mod:`.authoring`, its checks kept current in :mod:`.source_checks`), what each cell declared
(:mod:`.cells`), captures (:mod:`.captures`, compared in :mod:`.comparisons`), diagrams
(:mod:`.diagrams`), re-review (:mod:`.review`), the check summary (:mod:`.summary`),
records.json (:mod:`.kernel_records`), the report's state they share (:mod:`.state`), how
each result shows in JupyterLab (:mod:`.jupyter`, with the HTML of :mod:`tracework.views`),
and ``tracework new`` (:mod:`.scaffold`)."""
