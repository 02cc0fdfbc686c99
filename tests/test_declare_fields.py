"""Each record kind's fields are written once, in its model (tracework.records.kinds):
the declaring method's keywords, their types and defaults, and its docstring's Args are
held to the model here, so a field added, renamed or retyped on one side only fails."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Sequence
from typing import Any, get_args, get_origin, get_type_hints

import pytest
from pydantic import Field

from tracework.errors import RecordError
from tracework.notebook.declare import Evidence, Reviewed
from tracework.notebook.workbench import Workbench
from tracework.records.kinds import (
    KINDS,
    Absence,
    Annotation,
    AuthorityPath,
    Claim,
    Component,
    Guarantee,
    Markdown,
    OperativeObject,
    Record,
    Route,
)

#: The method that declares each kind.
DECLARING: dict[type[Record], str] = {
    Component: "component",
    OperativeObject: "operative_object",
    Route: "route",
    Claim: "claim",
    Absence: "absence",
    AuthorityPath: "authority_path",
    Guarantee: "guarantee",
    Annotation: "annotate",
}

#: Kinds whose method defaults the (required) label to the first sentence of a field.
LABEL_DERIVED = {Absence: "statement", AuthorityPath: "consumer", Guarantee: "covered_path"}


def _parameters(method: Callable[..., Any]) -> dict[str, inspect.Parameter]:
    return {n: p for n, p in inspect.signature(method).parameters.items() if n != "self"}


def _as_taken(annotation: Any) -> Any:
    """A model's annotation as a method takes it: a tuple of X is any sequence of X."""
    if get_origin(annotation) is tuple:
        item, *rest = get_args(annotation)
        assert rest == [Ellipsis], annotation
        return Sequence[item]  # type: ignore[valid-type]
    return annotation


def signature_problems(kind: type[Record], method: Callable[..., Any]) -> list[str]:
    """How ``method``'s parameters differ from ``kind``'s fields: names, kinds of
    parameter, required or not, defaults and types (Markdown said as Markdown)."""
    params = _parameters(method)
    fields = {"reviewed" if n == "reviewed_at" else n: f for n, f in kind.model_fields.items()}
    problems = [f"takes {n}=, which is no field" for n in params if n not in fields]
    problems += [f"does not take field {n}" for n in fields if n not in params]
    taken, said = get_type_hints(method), get_type_hints(method, include_extras=True)
    model = get_type_hints(kind, include_extras=True)
    plain = get_type_hints(kind)
    for name in [n for n in params if n in fields]:
        param, info = params[name], fields[name]
        wanted_kind = "POSITIONAL_OR_KEYWORD" if name == "id" else "KEYWORD_ONLY"
        if param.kind.name != wanted_kind:
            problems.append(f"{name} is {param.kind.name}, not {wanted_kind}")
        if info.is_required():
            derived = name == "label" and kind in LABEL_DERIVED
            if param.default != ("" if derived else inspect.Parameter.empty):
                problems.append(f"{name} is required by the model, defaulted {param.default!r}")
        elif param.default != info.default:
            problems.append(f"{name} defaults to {param.default!r}, the model to {info.default!r}")
        if name == "evidence":
            wanted: Any = Sequence[Evidence]
        elif name == "reviewed":
            wanted = Reviewed | None
        else:
            wanted = _as_taken(plain[name])
        if taken[name] != wanted:
            problems.append(f"{name} is typed {taken[name]}, the model's field {wanted}")
        markdown = name in model and "Markdown text" in repr(model[name])
        if markdown and "Markdown text" not in repr(said[name]):
            problems.append(f"{name} is Markdown in the model, not in the signature")
    return problems


def documented_args(doc: str) -> list[str]:
    """The names a Google-style docstring's Args section lists, in order."""
    section = doc.split("Args:\n", 1)[1].split("\n\n", 1)[0]
    lines = section.splitlines()
    indent = min(len(line) - len(line.lstrip()) for line in lines if line.strip())
    return [
        m.group(1)
        for line in lines
        if len(line) - len(line.lstrip()) == indent
        and (m := re.match(r"\s*(\**\w+):", line)) is not None
    ]


def test_every_kind_has_one_declaring_method() -> None:
    assert set(DECLARING) == set(KINDS)
    assert len(set(DECLARING.values())) == len(KINDS)


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.__name__)
def test_a_declaring_method_takes_exactly_its_kind_s_fields(kind: type[Record]) -> None:
    method = getattr(Workbench, DECLARING[kind])
    assert signature_problems(kind, method) == []
    assert next(iter(_parameters(method))) == "id"


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.__name__)
def test_a_declaring_method_documents_each_field_once_in_order(kind: type[Record]) -> None:
    method = getattr(Workbench, DECLARING[kind])
    doc = inspect.getdoc(method) or ""
    assert f"`{kind.prefix}" in doc.splitlines()[0]
    assert documented_args(doc) == list(_parameters(method))
    if kind in LABEL_DERIVED:
        assert f"default: the {LABEL_DERIVED[kind].replace('_', ' ')}'s first sentence" in doc


def test_a_field_on_one_side_only_is_found() -> None:
    """Positive controls: a model with a field the method lacks, a method with a keyword
    the model lacks or a type it does not have, and an Args section with ``**fields``."""

    class Coloured(Component):
        colour: Markdown | None = Field(None, title="Colour")

    assert signature_problems(Coloured, Workbench.component) == ["does not take field colour"]

    def component(self: Any, id: str, *, label: str, identity: str, details: int = 0) -> None:
        """Declare."""

    problems = signature_problems(Component, component)
    assert "does not take field evidence" in problems
    assert "details defaults to 0, the model to None" in problems
    assert any(p.startswith("details is typed <class 'int'>") for p in problems)
    assert "identity is Markdown in the model, not in the signature" in problems
    doc = "Declare.\n\nArgs:\n    id: The id.\n    **fields: The rest.\n        More.\n\nReturns:"
    assert documented_args(doc) == ["id", "**fields"]


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.__name__)
def test_a_misspelled_field_is_a_record_error_that_names_the_field(kind: type[Record]) -> None:
    """Not Python's TypeError: one RecordError, as every other mistake in declaring is,
    naming the field, the closest one the kind has, and (the hint) every one it takes."""
    method = getattr(Workbench, DECLARING[kind])
    with pytest.raises(RecordError) as caught:
        method(object(), f"{kind.prefix}x", lable="A name")
    assert caught.value.message == (
        f"{kind.prefix}x: {DECLARING[kind]}() has no field lable=; did you mean label=?"
    )
    hint = caught.value.hint or ""
    assert hint.startswith("it takes id, ")
    fields = ["reviewed" if n == "reviewed_at" else n for n in kind.model_fields if n != "id"]
    assert re.findall(r"(\w+)=", hint) == list(_parameters(method))[1:]
    assert sorted(re.findall(r"(\w+)=", hint)) == sorted(fields)


def test_a_field_missing_or_given_by_place_is_a_record_error_too() -> None:
    with pytest.raises(RecordError) as caught:
        Workbench.component(object(), "RT-CMP-x", label="A name")
    assert caught.value.message == "RT-CMP-x: component() needs identity="
    assert "identity= (required)" in (caught.value.hint or "")
    with pytest.raises(RecordError) as caught:
        Workbench.component(object(), "RT-CMP-x", "A name", identity="it")
    assert caught.value.message == (
        "RT-CMP-x: component() takes 1 argument by place (id) and the rest by name: "
        "2 were given by place"
    )
    with pytest.raises(RecordError, match=r"^mark retention/persistence: mark\(\) has no keyword"):
        Workbench.mark(object(), "retention", "persistence", presnt=True)


def _api() -> list[tuple[str, Callable[..., Any]]]:
    """Every function of the notebook API an analyst calls: tw.open, and each public
    method of what it returns and what those return."""
    from tracework.notebook.captures import CaptureView
    from tracework.notebook.jupyter import ExcerptView
    from tracework.notebook.workbench import SourceHandle, open

    found: list[tuple[str, Callable[..., Any]]] = [("open", open)]
    for cls in (Workbench, SourceHandle, CaptureView, ExcerptView):
        for name, member in inspect.getmembers(cls, inspect.isfunction):
            if not name.startswith("_"):
                found.append((f"{cls.__name__}.{name}", member))
    return found


@pytest.mark.parametrize(("name", "function"), _api(), ids=[n for n, _ in _api()])
def test_every_call_of_the_notebook_api_names_a_misspelled_keyword(
    name: str, function: Callable[..., Any]
) -> None:
    """No TypeError with a traceback anywhere in the API an analyst types: a keyword the
    call does not take is one TraceworkError naming it, the closest and all it takes."""
    from tracework.errors import TraceworkError

    params = [p for p in inspect.signature(function).parameters if p != "self"]
    typo = (params[0][:-1] + params[0][-1] * 2) if params else "typo"
    args = () if name == "open" else (object(),)
    with pytest.raises(TraceworkError) as caught:
        function(*args, **{typo: None})
    message, hint = caught.value.message, caught.value.hint or ""
    assert f"has no keyword {typo}=" in message or f"has no field {typo}=" in message
    if params:
        assert message.endswith(f"; did you mean {params[0]}=?"), message
    assert hint.startswith("it takes "), hint
    assert all(re.search(rf"\b{p}\b", hint) for p in params), hint


def test_a_review_stamp_is_taken_as_it_is() -> None:
    from tracework.notebook.declare import RecordDeclarations
    from tracework.records.kinds import ReviewStamp

    stamp = ReviewStamp(commit="a" * 40, date="2026-03-20")
    assert RecordDeclarations._stamp(object(), stamp, "RT-CMP-x") is stamp
