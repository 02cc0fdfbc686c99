"""What a report records, and the checks that decide each record.

The record kinds an analyst declares (:mod:`.kinds`); how an evidenced absence is
searched (:mod:`.absences`), a diagram checked against the register (:mod:`.diagrams`; a
mermaid-py flowchart read into one by :mod:`.mermaidpy`) and a rubric read
(:mod:`.rubrics`); and the files a render writes from them — records.json,
manifest.json, a history entry, a batch outcome — as one model each (:mod:`.artefacts`,
JSON Schemas by :mod:`.schemas`).  The kernel writes these files and the render, the batch
and the site read them, so they sit below all three.
"""
