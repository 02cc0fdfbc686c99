"""One report at one commit: its inputs read and checked (:mod:`.inputs`, the source
notebook's in :mod:`.notebooks`), executing the notebook (:mod:`.execution`), what ran
normalised and capped by nbconvert preprocessors (:mod:`.outputs`, :mod:`.cuts`), the
render's stages in order (:mod:`.pipeline`), exporting the page with nbconvert
(:mod:`.export`, :mod:`.pagesafety`), and the report's drift summary and history
(:mod:`.history`)."""
