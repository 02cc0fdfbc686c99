"""``tracework register add-file`` writes the bytes it always wrote.

A run of ``add-file`` commands (globs into an empty ``files: {}``, globs appending to
a source's files with another source after it, files registered again, an expected
hash changed, a hand edit) against a subject whose names YAML must quote or cannot
write as a plain key (spaces, ``true``, dates, numbers, ``#``, ``: ``, non-ASCII, a
name too long for a simple key), with a symlink, a binary file, an empty one and a Git
LFS pointer.  After each command the register's bytes and the command's output are
compared with ``tests/data/register_add_file.json``, which the full round-trip edit
wrote before ``add-file`` learned to splice its entries in (the code of that time made
it): the splice must give, byte for byte, what that edit gave.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

FIXTURE = Path(__file__).with_name("data") / "register_add_file.json"
LFS_POINTER = f"version https://git-lfs.github.com/spec/v1\noid sha256:{'4d' * 32}\nsize 12345\n"
SUBJECT: dict[str, bytes | str] = {
    "src/pkg/a.py": "a = 1\n",
    "src/pkg/b.py": "b = 2\n",
    "src/pkg/sub/c.py": "c = 3\n",
    "src/odd name.py": "spaced = True\n",
    "src/true": "a name YAML reads as a boolean\n",
    "src/2026-01-01": "a name YAML reads as a date\n",
    "src/1e5": "a name YAML reads as a number\n",
    "src/0x1f": "and another\n",
    "src/null": "and nothing\n",
    "src/#hash.txt": "a comment sign first\n",
    "src/a: b.txt": "a colon and a space\n",
    "src/ünïcödé.py": "ü = 1\n",
    ".github/ci.yml": "on: push\n",
    "-dash.txt": "a dash first\n",
    "true": "a name YAML reads as a boolean\n",
    "1e5": "a name YAML reads as a number\n",
    "2026-01-01": "a name YAML reads as a date\n",
    "~": "a name YAML reads as nothing\n",
    "#hash.txt": "a comment sign first\n",
    "'quoted'.txt": "quotes first\n",
    "[set].txt": "a bracket first\n",
    "a,b{c}.txt": "flow indicators inside\n",
    " lead.txt": "a space first\n",
    "trail .txt": "a space before the dot\n",
    "tab\there.txt": "a tab inside\n",
    "back\\slash.txt": "a backslash inside\n",
    "ünï.txt": "non-ASCII at the top\n",
    "data/blob.bin": b"\x00\x01\x02binary\n",
    "data/empty.txt": "",
    "data/" + "x" * 130 + ".txt": "a name longer than a simple key\n",
    "data/lfs.bin": LFS_POINTER,
}

#: The commands, in order; ``PIN`` is the subject's commit, ``HAND`` a hand edit.
STEPS: list[tuple[str, ...]] = [
    ("register", "add-source", "demo", "SRC-2", "--subject", "toy", "--commit", "PIN"),
    ("register", "add-file", "demo", "SRC-2", "src/pkg"),
    ("register", "add-file", "demo", "SRC-1", "src/**"),
    ("register", "add-file", "demo", "SRC-1", "**"),
    ("register", "add-file", "demo", "SRC-2", "*", "data/**"),
    ("quote", "demo", "SRC-1", "src/pkg/a.py", "--lines", "1-1"),
    ("register", "add-file", "demo", "SRC-1", "src/pkg/a.py", "--expect-sha256", "ab" * 32),
    ("register", "add-file", "demo", "SRC-1", "src/**"),
    ("register", "add-file", "demo", "SRC-2", "src/**/*.py"),
    ("quote", "demo", "SRC-1", "src/pkg/b.py", "--lines", "1-1"),
    ("HAND",),
    ("register", "add-file", "demo", "SRC-2", ".github"),
    ("register", "add-file", "demo", "SRC-2", "src"),
    ("register", "add-source", "demo", "SRC-3", "--subject", "toy", "--commit", "PIN"),
    ("register", "add-file", "demo", "SRC-3", "data"),
    ("register", "add-file", "demo", "SRC-3", "src/pkg", "*.txt"),
    ("register", "add-file", "demo", "SRC-2", "nothing/**"),
    ("register", "add-file", "demo", "SRC-9", "src/**"),
    ("register", "add-file", "demo", "SRC-1", "src/pkg", "--expect-sha256", "ab" * 32),
]


def hand_edit(path: Path) -> None:
    """A comment above the quotes, as an analyst may write one."""
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("\nquotes:\n", "\n# kept by hand\nquotes:\n"), encoding="utf-8")


def run_steps(tw, register: Path, pin: str) -> list[dict[str, object]]:
    """Each command's exit code and output, and the register's text after it."""
    seen: list[dict[str, object]] = []
    for step in STEPS:
        if step == ("HAND",):
            hand_edit(register)
            seen.append({"step": list(step), "register": register.read_text(encoding="utf-8")})
            continue
        result = tw(*(pin if word == "PIN" else word for word in step))
        seen.append(
            {
                "step": list(step),
                "exit": result.exit_code,
                "stdout": result.stdout,
                "stderr": result.stderr,
                "register": register.read_text(encoding="utf-8"),
            }
        )
    return seen


@pytest.fixture
def subject(make_repo, pinned):
    repo = make_repo("toy")
    for rel, content in SUBJECT.items():
        repo.write(rel, content)
    repo.symlink("link.py", "src/pkg/a.py")
    repo.commit("first")
    return pinned(repo=repo)


def test_add_file_writes_what_the_full_edit_wrote(subject, tw, workspace):
    seen = run_steps(tw, workspace.registers / "demo.yaml", subject.commits[-1])
    assert seen == json.loads(FIXTURE.read_text(encoding="utf-8"))
