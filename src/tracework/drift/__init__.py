"""What evidence still holds at another commit: what a quote's content is (:mod:`.content`),
where it went (:mod:`.relocate`), since which commit it changed (:mod:`.first_change`), and
``tracework check`` (:mod:`.check`)."""
