"""HTML views: how records, quotes, checks and captures look, the same in JupyterLab and
in the published report.

Cards for quotes, files, records, absences, diagrams and the check summary, with the
escaping every view uses (:mod:`.cards`); rubric marks (:mod:`.marks`); a capture's section,
cases, excerpts and comparisons (:mod:`.capture`, :mod:`.capture_parts`); transcripts as
a reader reads them (:mod:`.transcripts`).  Views compute nothing they show: the data
comes from the layers below, and every value from a subject is escaped here.
"""
