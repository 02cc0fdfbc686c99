"""Living in JupyterLab: rich display objects, the running cell, short error messages."""

from __future__ import annotations

import difflib
import functools
import inspect
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from tracework.capture.compare import Comparison
from tracework.capture.evidence import CaseInfo, ExcerptInfo
from tracework.errors import TraceworkError
from tracework.register.models import Quote
from tracework.text import counted, visible_name
from tracework.views.capture import case_html, excerpt_html
from tracework.views.cards import FileInfo, QuoteInfo, esc, file_html, quote_html, styled

P = ParamSpec("P")
T = TypeVar("T")

#: Who a call is about, from its arguments (``args`` with ``self`` first when it is a
#: method): a record's id, a mark's rubric and mechanism; "" for none.
Subject = Callable[[Sequence[object], Mapping[str, object]], str]


def arguments_checked(
    subject: Subject | None = None,
    *,
    error: type[TraceworkError] = TraceworkError,
    word: str = "keyword",
) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """Make a mistake in calling a function of the notebook API one ``error`` that names
    it, not Python's ``TypeError`` with a traceback: a keyword it has none of (a typo,
    named with the closest it has), one it needs and was not given, an argument given
    twice or too many given by place.  The hint lists every keyword it takes, the
    required ones said so; ``word`` is what a keyword is called ("field" for a record
    kind's), ``subject`` who the call is about, which the message starts with."""

    def decorate(function: Callable[P, T]) -> Callable[P, T]:
        signature = inspect.signature(function)
        params = [p for name, p in signature.parameters.items() if name != "self"]
        method = len(params) < len(signature.parameters)
        name = f"{function.__name__}()"
        required = [p.name for p in params if p.default is p.empty]
        taken = ", ".join(  # those it takes by place bare, as its signature writes them
            p.name
            if p.kind is not p.KEYWORD_ONLY
            else f"{p.name}=" + (" (required)" if p.name in required else "")
            for p in params
        )

        @functools.wraps(function)
        def call(*args: P.args, **kwargs: P.kwargs) -> T:
            try:
                signature.bind(*args, **kwargs)
            except TypeError as exc:
                install_error_display()  # before tw.open() installs it: one line too
                about = subject(args, kwargs) if subject is not None else ""
                problem = _call_problem(params, args[1:] if method else args, kwargs, word)
                raise error(
                    f"{about + ': ' if about else ''}{name} {problem or exc}",
                    hint=f"it takes {taken or 'nothing'}",
                ) from None
            return function(*args, **kwargs)

        return call

    return decorate


def _call_problem(
    params: Sequence[inspect.Parameter],
    args: Sequence[object],
    kwargs: Mapping[str, object],
    word: str,
) -> str | None:
    """What is wrong with a call that ``params`` refuse, in words (None: say Python's)."""
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        return None
    names = [p.name for p in params]
    for key in kwargs:
        if key not in names:
            close = difflib.get_close_matches(key, names, n=1)
            return f"has no {word} {key}=" + (f"; did you mean {close[0]}=?" if close else "")
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(args) > len(positional):
        first = f" ({', '.join(positional)})" if positional else ""
        return (
            f"takes {counted(len(positional), 'argument')} by place{first} and the rest by "
            f"name: {len(args)} were given by place"
        )
    twice = [n for n in positional[: len(args)] if n in kwargs]
    if twice:
        return f"was given {twice[0]} twice, by place and as {twice[0]}="
    given = set(positional[: len(args)]) | set(kwargs)
    missing = [p for p in params if p.default is p.empty and p.name not in given]
    if missing:
        return "needs " + ", ".join(p.name + "=" * (p.kind is p.KEYWORD_ONLY) for p in missing)
    return None


class Html:
    """An object that JupyterLab shows as HTML, styled (and a terminal as its text).

    ``declared`` is the record or mark it shows (its id, a mark's anchor) when it is what
    a declaring method returned: shown as a cell's result, its card is not repeated in
    the cell's summary of declarations (see :func:`watch_cells`)."""

    def __init__(self, markup: str, text: str, declared: str | None = None) -> None:
        self.markup, self.text, self.declared = markup, text, declared

    def _repr_html_(self) -> str:
        return styled(self.markup)

    def __repr__(self) -> str:
        return self.text


@dataclass(frozen=True)
class QuoteView:
    """A quote as the notebook sees it: register entry, state at the commit, display."""

    id: str
    info: QuoteInfo
    replaced: Quote | None = None  # what replace=True pointed this id away from

    @property
    def state(self) -> str:
        return self.info.state

    @property
    def text(self) -> str:
        return self.info.quote.text

    @property
    def sha256(self) -> str:
        return self.info.quote.sha256

    def _repr_html_(self) -> str:
        if self.replaced is None:
            return styled(quote_html(self.info))
        old = self.replaced
        note = (
            f'<p class="tw-note">Replaced {esc(self.id)}: was '
            f"{esc(visible_name(old.path))}:{old.lines[0]}–{old.lines[1]}, sha256 "
            f"{esc(old.sha256[:12])}.</p>"
        )
        return styled(note + quote_html(self.info))

    def __repr__(self) -> str:
        return f"<quote {self.id} {self.info.location()} @ {self.info.pin[:12]} {self.state}>"


@dataclass(frozen=True)
class FileView:
    """A whole file cited as evidence, as the notebook sees it: ``evidence=[f]``."""

    info: FileInfo

    @property
    def id(self) -> str:
        return self.info.key

    @property
    def state(self) -> str:
        return self.info.state

    @property
    def sha256(self) -> str:
        return self.info.entry.sha256

    def _repr_html_(self) -> str:
        return styled(file_html(self.info))

    def __repr__(self) -> str:
        return f"<file {self.id} @ {self.info.pin[:12]} {self.state}>"


class CaseView:
    """A case of a capture, cited as evidence: ``evidence=[cap.case("F-01")]``."""

    def __init__(self, info: CaseInfo) -> None:
        self.info = info

    @property
    def id(self) -> str:
        return self.info.key

    @property
    def status(self) -> str | None:
        return self.info.case.status

    @property
    def state(self) -> str:
        return self.info.state

    def _repr_html_(self) -> str:
        return styled(case_html(self.info))

    def __repr__(self) -> str:
        return f"<case {self.id} {self.status or 'model-driven'} {self.state}>"


#: How a capture compares an excerpt with a reference: ``(info, quote, case, path,
#: previous)`` to the excerpt with that comparison (the workbench's).
Compare = Callable[[ExcerptInfo, QuoteView | str | None, str | None, str | None, bool], ExcerptInfo]


class ExcerptView:
    """A value from a case's transcript, cited as evidence (hashed: its canonical JSON).

    Shown, the value as a reader reads it (a chat request as a conversation), what it
    was compared with (:meth:`against`), and its canonical JSON one click away.
    """

    def __init__(self, info: ExcerptInfo, compare: Compare | None = None) -> None:
        self.info = info
        self._compare = compare

    @property
    def id(self) -> str:
        return self.info.key

    @property
    def value(self) -> Any:
        return self.info.value

    @property
    def sha256(self) -> str:
        return self.info.sha256

    @property
    def comparisons(self) -> tuple[Comparison, ...]:
        """What this excerpt was compared with, each with its verdict and sentence."""
        return self.info.comparisons

    @arguments_checked()
    def against(
        self,
        quote: QuoteView | str | None = None,
        *,
        case: str | None = None,
        path: str | None = None,
        previous: bool = False,
    ) -> ExcerptView:
        """Compare this value with a named reference, by lines; the report says how they
        differ in a sentence computed here ("equals Q-template with only lines 12–18
        inserted"), shows the lines that differ and the whole difference one click away,
        and records the reference and the verdict in records.json.

        Give one reference:

        - `quote`: a quote (or its id) of the register — its text at the commit the value
          was captured at; a quoted Python string literal (`PROMPT = \"\"\"…\"\"\"`)
          is compared as the string it is;
        - `case=` and/or `path=`: another recorded value of this capture (`path`
          defaults to this excerpt's, `case` to this excerpt's case);
        - `previous=True`: the same case and path in the capture made at the nearest
          commit before this one.

        A reference not found at this render (a quote missing at the commit, no earlier
        capture) is shown and recorded as missing; asking again with the same reference
        replaces the comparison.

        Returns:
            This excerpt, with the comparison; cite it as evidence like the excerpt.

        Examples:
            ```python
            recalled = cap.transcript("F-02", "second prompt.prompt")
            recalled.against(case="F-02", path="same message, nothing stored.prompt")
            ```
        """
        if self._compare is None:
            raise TraceworkError(
                f"{self.id} cannot be compared here",
                hint='take it from the capture: cap.transcript("CASE", "PATH").against(...)',
            )
        given = [quote is not None, case is not None or path is not None, bool(previous)]
        if sum(given) != 1:
            raise TraceworkError(
                f"against() takes one reference, {sum(given)} given",
                hint="a quote, case=/path= (another recorded value) or previous=True",
            )
        info = self._compare(self.info, quote, case, path, bool(previous))
        return ExcerptView(info, self._compare)

    def _repr_html_(self) -> str:
        return styled(excerpt_html(self.info))

    def __repr__(self) -> str:
        compared = "".join(f"; {c.sentence}" for c in self.info.comparisons)
        return f"<excerpt {self.id} sha256 {self.sha256[:12]} {self.info.state}{compared}>"


def display(obj: Any, metadata: Mapping[str, object] | None = None, raw: bool = False) -> None:
    try:
        from IPython.display import display
    except ImportError:  # plain Python: print the text form
        print(obj.get("text/plain") if raw else repr(obj))
        return
    display(obj, metadata=metadata, raw=raw)


def cell_id() -> str | None:
    """The id of the JupyterLab cell running now, so re-running a cell may re-declare."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    if shell is None or not hasattr(shell, "get_parent"):
        return None
    parent = shell.get_parent() or {}
    cell = parent.get("metadata", {}).get("cellId")
    return str(cell) if cell else None


def watch_cells(start: Callable[[str], None], end: Callable[[object], None] | None = None) -> bool:
    """Call ``start(cell_id)`` as each JupyterLab cell begins to run (IPython's
    ``pre_run_cell`` event), and ``end(shown)`` when any cell has run (``post_run_cell``,
    whether or not it raised), with what the cell showed as its result (the value of its
    last expression, None when it showed none: a statement, a ``;``, an error).  The
    callbacks are bound methods held weakly, so a workbench the notebook dropped (its
    ``tw.open`` cell re-run) stops listening instead of being kept alive.  Returns False
    outside IPython, where there are no cells."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None or not hasattr(shell, "events"):
        return False
    on_start = weakref.WeakMethod(start)

    def pre_run_cell(info: Any) -> None:
        callback, cell = on_start(), getattr(info, "cell_id", None)
        if callback is not None and cell:
            callback(str(cell))

    shell.events.register("pre_run_cell", pre_run_cell)
    if end is not None:
        on_end = weakref.WeakMethod(end)

        def post_run_cell(result: Any) -> None:
            callback = on_end()
            if callback is not None:
                callback(getattr(result, "result", None))

        shell.events.register("post_run_cell", post_run_cell)
    return True


def notebook_file() -> Path | None:
    """The notebook file this kernel serves, as Jupyter's server names it to the kernel
    (``__session__``), or None when it does not (a console, papermill, plain Python)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    name = getattr(shell, "user_ns", {}).get("__session__") if shell is not None else None
    if not isinstance(name, str) or not name.endswith(".ipynb"):
        return None
    return Path(name)


def show_error(error: BaseException, shell: Any = None) -> list[str]:
    """Show an error in the running cell as its one-line message (IPython does not show
    what a custom handler returns, and an event callback's errors come with a traceback:
    publish it ourselves)."""
    if shell is None:
        from IPython import get_ipython

        shell = get_ipython()
    stb = [f"\x1b[31m{type(error).__name__}\x1b[0m: {error}"]
    shell._showtraceback(type(error), error, stb)
    return stb


def install_error_display() -> None:
    """Show a TraceworkError in a cell as its message, not a stack of library frames."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None:
        return

    def handler(
        shell: Any, etype: type, value: BaseException, tb: Any, tb_offset: Any = None
    ) -> list[str]:
        return show_error(value, shell)

    shell.set_custom_exc((TraceworkError,), handler)
