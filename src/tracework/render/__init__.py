"""One report at one commit: executing the notebook (:mod:`.execution`), the render's
stages in order (:mod:`.pipeline`), exporting the page with nbconvert (:mod:`.export`,
:mod:`.pagesafety`), and the report's drift summary and history (:mod:`.history`)."""
