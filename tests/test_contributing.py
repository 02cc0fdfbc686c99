"""The contributing page's example record kind is code that works with the models as
they are: a change to ``Record`` that would make the walk-through wrong fails here."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
from pydantic import Field, ValidationError

from tracework.records import kinds

PAGE = Path(__file__).resolve().parents[1] / "docs" / "contributing.md"


def _example() -> str:
    section = PAGE.read_text(encoding="utf-8").split("## Adding a record kind", 1)[1]
    [block] = re.findall(r"```python\n(.*?)```", section.split("## Adding a command")[0], re.S)
    return textwrap.dedent(block)


def test_the_example_kind_is_a_record_kind():
    names = {"ClassVar": kinds.ClassVar, "Field": Field, "Markdown": kinds.Markdown}
    names |= {"Record": kinds.Record}
    exec(compile(_example(), str(PAGE), "exec"), names)
    trigger = names["Trigger"]
    trigger.model_rebuild(_types_namespace=names)  # exec'd, not imported: resolve its names
    made = trigger(id="RT-TRG-timer", label="Timer", source="A cron entry.", route="RT-RTE-x")
    assert made.kind == "trigger" and made.references() == {"route": "RT-RTE-x"}
    assert [title for title, _ in made.fields()][:1] == ["Source"]
    with pytest.raises(ValidationError):
        trigger(id="RT-CMP-wrong", label="x", source="y")  # the prefix is checked
