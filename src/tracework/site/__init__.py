"""``tracework publish``: what the renders left in ``reports/`` (:mod:`.read`), written as
a static site (:mod:`.publish`)."""
