"""What the screen's readers hand back: findings, and the commands that would run.

A :class:`Finding` is one line of the screen; a :class:`Command` is a command some
configuration would run, kept so that the task files it calls (a ``make install``
in a CI step) can say what runs them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

CATEGORIES = ("auto-run", "agent-instructions", "build-time", "dependencies", "unpinned")


@dataclass(frozen=True, order=True)
class Finding:
    """One thing the screen found: where, and the line that makes it one.

    ``run_by`` names, as ``path:line``, what was found to run it (the CI step that
    calls a Makefile target); it is empty when the screen claims no caller.  ``step``
    names the CI job and step the line is in (``job test, step 3 "tools"``), where
    the configuration has them.
    """

    category: str
    path: str
    line: int
    kind: str
    text: str
    run_by: tuple[str, ...] = ()
    step: str = ""

    def what(self) -> str:
        """The finding's words as every output shows them: its kind, then its step."""
        return f"{self.kind} ({self.step})" if self.step else self.kind


@dataclass(frozen=True)
class Command:
    """A command some configuration of the subject would run.

    ``context`` says who runs it, in words ("a CI step", "npm install (postinstall
    script)"); ``folder`` is where it runs, relative to the root, so that ``make``
    finds the right Makefile; ``install`` is true when installing the subject runs it.
    """

    path: str
    line: int
    command: str
    context: str
    folder: str
    install: bool = False


@dataclass
class Found:
    """What one reader found in one file."""

    findings: list[Finding] = field(default_factory=list)
    commands: list[Command] = field(default_factory=list)

    def __iadd__(self, other: Found) -> Found:
        self.findings += other.findings
        self.commands += other.commands
        return self


def shown(text: str) -> str:
    """A subject line as the screen keeps it: stripped, and at most 240 characters."""
    return text.strip()[:240]


def name_of(path: str) -> str:
    """A tree path's last part (``PurePosixPath(path).name`` without building a path:
    the screen asks this of every path of a large tree several times)."""
    return path.rpartition("/")[2]


def folder_of(path: str) -> str:
    """A tree path's folder, ``.`` at the root (as ``PurePosixPath.parent`` says)."""
    return path.rpartition("/")[0] or "."
