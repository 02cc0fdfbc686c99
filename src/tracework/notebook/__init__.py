"""The analyst's notebook: ``tw.open()`` and the workbench (:mod:`.workbench`), declaring
records (:mod:`.declare`; the kinds are in :mod:`tracework.records`), quoting while
writing (:mod:`.authoring`), how each result shows in JupyterLab (:mod:`.jupyter`, with
the HTML of :mod:`tracework.views`), and ``tracework new`` (:mod:`.scaffold`)."""
