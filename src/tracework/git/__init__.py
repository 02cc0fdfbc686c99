"""Subjects and their mirrors: the hardened git every command runs (:mod:`.env`), subject
definitions and ``fetch`` (:mod:`.subjects`), the mirror's object store read without a
checkout (:mod:`.mirror`), a read-only GitPython view of a mirror for notebooks
(:mod:`.history`), and links to forges (:mod:`.forge`)."""
