"""The analyst's notebook: ``tw.open()`` and the workbench (:mod:`.workbench`), declaring
records (:mod:`.declare`, kinds in :mod:`.records`), evidenced absences, rubric marks,
diagrams, and how each looks in JupyterLab and in the report (:mod:`.views`,
:mod:`.jupyter`); ``tracework new`` (:mod:`.scaffold`)."""
