"""A read-only GitPython ``Repo`` over a subject's mirror, for exploring history in a notebook.

``src.repo`` (``src = wb.source("SRC-1")``) is a :class:`HistoryRepo`: GitPython's
``Repo`` with its usual API (``iter_commits``, ``commit.tree``, ``blob.data_stream``,
``commit.diff``, ``blame``, ``repo.git.log(...)``) over the mirror's objects and refs.
Two things keep the mirror's own files from acting through it.

**A view, not the mirror.**  Git reads a repository's config and ``info/attributes``
whatever its environment says, and a mirror left by an older version or copied in may
hold keys that run programs on reads: a textconv driver fires on ``git log -p``,
``git show`` and ``git blame``, ``diff.external`` on ``git diff``, ``log.showSignature``
with ``gpg.program`` on ``git log``.  (tracework's own reads never use those commands;
an analyst exploring history does.)  So GitPython is opened on a *view*: a bare
repository tracework writes into a temporary folder, whose config is tracework's own,
with no hooks and no ``info/``, whose ``objects/info/alternates`` names the mirror's
object store, whose ``packed-refs`` copies the mirror's branches and tags, and whose
``HEAD`` is the commit the notebook reads (detached).  Nothing of the mirror but its
objects and its ref names is ever read through it.  The view is rebuilt when the
mirror's branches or tags change (a fetch), and removed when the repo is closed or
the kernel ends.

**The hardened environment.**  Every git that GitPython starts for it runs with
:func:`tracework.git.env.hardened_env` (system and global config ignored, the safe
config forced, no protocol allowed) and ``GIT_DIR`` set to the view.  GitPython merges
``os.environ`` into a child's environment, so a ``GIT_*`` variable the kernel
inherited would survive any environment passed to it; :class:`ReadOnlyGit` therefore
starts git through ``env -u NAME…``, which removes each of them before git starts.
Nor does GitPython's own discovery read ``GIT_DIR``, ``GIT_COMMON_DIR``,
``GIT_WORK_TREE`` or ``GIT_OBJECT_DIRECTORY``: :class:`HistoryRepo` sets the
repository's paths itself.

**Read-only** means precisely:

- nothing done through it writes to the mirror: git writes objects and refs only
  into the repository it runs in, which is the view, never into an alternate object
  store;
- ``repo.git`` runs only the commands in :data:`READ_COMMANDS`, with no git option
  before the command (``-c``, ``--git-dir``, ``--exec-path``…), no ``--output`` (which
  writes a file), no ``--no-index`` (which reads outside the repository) and no
  ``grep -O`` (which runs a program); anything else raises :class:`ReadOnlyRepository`
  before a process starts, as do the ``Repo`` methods that write (``create_head``,
  ``create_tag``, ``create_remote``, ``config_writer``, ``archive``…);
- GitPython's lower-level objects can still write files of the view directly (a
  ``Reference`` created by hand, ``repo.odb.store``): such a write stays in the
  throwaway view and is gone with it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import git as gitpython
from git.config import GitConfigParser
from git.db import GitCmdObjectDB

from tracework.errors import GitError, ReadOnlyRepository
from tracework.git.env import hardened_env, run_git
from tracework.git.mirror import FULL_OID, Mirror

#: The git commands ``src.repo.git`` runs: each of them only reads.
READ_COMMANDS = frozenset(
    {
        "annotate",
        "blame",
        "cat-file",
        "cherry",
        "count-objects",
        "describe",
        "diff",
        "diff-tree",
        "for-each-ref",
        "grep",
        "log",
        "ls-tree",
        "merge-base",
        "name-rev",
        "range-diff",
        "rev-list",
        "rev-parse",
        "shortlog",
        "show",
        "show-ref",
        "version",
        "whatchanged",
    }
)

#: Options GitPython passes before a command (``commit.diff(create_patch=True)`` asks for
#: git's default diff prefixes whatever the config says): harmless, so allowed.
GITPYTHON_OPTIONS = frozenset({("-c", "diff.mnemonicPrefix=false")})

#: The config of every view: a bare repository, and nothing else.
VIEW_CONFIG = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = true\n"

#: The refs a view copies from its mirror.
_REFS = ("refs/heads/", "refs/tags/")


def _refuse(what: str, hint: str | None = None) -> NoReturn:
    raise ReadOnlyRepository(
        f"src.repo is read-only: {what}",
        hint=hint or "explore history with reads (log, show, diff, blame…); quote with src.quote",
    )


def check_read(args: Sequence[str]) -> None:
    """Refuse ``git ARGS`` unless it is one of :data:`READ_COMMANDS` without an option
    that writes a file, reads outside the repository or runs a program.  The only git
    option allowed before the command is one GitPython itself passes (see
    :data:`GITPYTHON_OPTIONS`)."""
    while len(args) >= 2 and (args[0], args[1]) in GITPYTHON_OPTIONS:
        args = args[2:]
    if not args or args[0] not in READ_COMMANDS:
        first = args[0] if args else "nothing"
        if first.startswith("-"):
            _refuse(f"git options before the command ({first}) are refused")
        _refuse(f"`git {first}` is not one of the commands that only read")
    command = args[0]
    for arg in args[1:]:
        if arg == "--":
            break  # paths from here on, never options
        name = arg.split("=", 1)[0]
        if _names(name, "--output", 4):
            _refuse(f"`git {command} --output` writes a file")
        if _names(name, "--no-index", 6):
            _refuse(f"`git {command} --no-index` reads files outside the repository")
        if command == "grep" and (
            _names(name, "--open-files-in-pager", 4)
            or (arg.startswith("-") and not arg.startswith("--") and "O" in arg)
        ):
            _refuse("`git grep -O` runs a program")


def _names(given: str, option: str, shortest: int) -> bool:
    """Whether ``given`` names long ``option``: git takes any unambiguous abbreviation
    (``--outp`` is ``--output``), so every prefix of at least ``shortest`` characters."""
    return len(given) >= shortest and option.startswith(given)


class ReadOnlyGit(gitpython.Git):
    """GitPython's ``Git`` that runs only reads, in the view, in the hardened environment."""

    def __init__(self, git_dir: Path) -> None:
        super().__init__(str(git_dir))
        self._tracework_git_dir = str(git_dir)

    def execute(self, command: Any, *args: Any, **kwargs: Any) -> Any:
        """Check ``command`` (see :func:`check_read`), then run it as git with exactly
        the hardened environment (and ``GIT_DIR``): see the module's docstring."""
        if args or isinstance(command, (str, bytes, os.PathLike)) or kwargs.get("shell"):
            _refuse("a command is a list of arguments, run without a shell")
        if kwargs.pop("env", None) is not None:
            _refuse("the environment of its git is tracework's hardened one, not another")
        words = [os.fsdecode(w) if isinstance(w, (bytes, os.PathLike)) else str(w) for w in command]
        if not words or Path(words[0]).name not in (
            "git",
            Path(str(self.GIT_PYTHON_GIT_EXECUTABLE)).name,
        ):
            _refuse(f"it runs git only, not {words[0] if words else 'nothing'!r}")
        check_read(words[1:])
        env = hardened_env()
        env["GIT_DIR"] = self._tracework_git_dir
        inherited = {*os.environ, *self._environment}
        drop = sorted(k for k in inherited if k.startswith("GIT_") and k not in env)
        unset = [word for name in drop for word in ("-u", name)]
        try:
            return super().execute([_env_program(), *unset, "git", *words[1:]], env=env, **kwargs)
        except gitpython.GitCommandError as exc:  # name the git command, not `env -u …`
            exc.command = ["git", *words[1:]]
            exc._cmd, exc._cmdline = "git", " ".join(exc.command)
            raise

    def update_environment(self, **kwargs: Any) -> dict[str, str | None]:
        if not kwargs:
            return {}
        _refuse("its git runs in tracework's hardened environment, which is not changed")

    def set_persistent_git_options(self, **kwargs: Any) -> None:
        _refuse("git options before the command are refused")


def _env_program() -> str:
    found = shutil.which("env", path=os.defpath + os.pathsep + os.environ.get("PATH", ""))
    if found is None:
        raise GitError("env is not on PATH", hint="src.repo starts git through `env -u`")
    return found


class HistoryRepo(gitpython.Repo):
    """GitPython's ``Repo`` over a view of a subject's mirror: read-only (see the module).

    ``head.commit`` is the commit the notebook reads (the source's pin, or the commit a
    render was asked for); ``heads`` and ``tags`` are the mirror's branches and tags.
    """

    GitCommandWrapperType = ReadOnlyGit  # type: ignore[assignment]

    def __init__(self, view: Path, mirror: Path) -> None:
        # Repo.__init__ would look for GIT_DIR, GIT_COMMON_DIR, GIT_WORK_TREE and
        # GIT_OBJECT_DIRECTORY in os.environ: the paths are set here instead, the same
        # attributes it sets (a test holds them to a plain Repo's).
        self.git_dir = str(view)
        self._working_tree_dir = None
        self._common_dir = ""
        self._bare = True
        self.working_dir = str(view)
        self.git = ReadOnlyGit(view)
        self.odb = GitCmdObjectDB(str(view / "objects"), self.git)
        self.mirror = mirror
        self._removal = weakref.finalize(self, _remove_view, view, self.git)

    def close(self) -> None:
        """Stop its git processes and remove the view (``src.repo`` makes a new one)."""
        if getattr(self, "_removal", None) is not None:
            self._removal()

    def __repr__(self) -> str:
        return f"<read-only history of {self.mirror.name} at {self.head.commit.hexsha[:12]}>"

    # -- config: the view's own, read by GitPython; never written -------------------------

    def config_reader(self, config_level: Any = None) -> GitConfigParser:
        """The view's config only: git ignores system and global config for it too."""
        return super().config_reader("repository")

    # -- what writes ------------------------------------------------------------------

    def config_writer(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse("its config is not written")

    def create_head(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse("no branch is created", "a commit is named by its id: repo.commit(sha)")

    def delete_head(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse("no branch is deleted")

    def create_tag(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse("no tag is created")

    def delete_tag(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse("no tag is deleted")

    def create_remote(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse("no remote is added", "`tracework fetch SUBJECT` updates the mirror")

    def delete_remote(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse("no remote is removed")

    def create_submodule(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse("no submodule is added")

    def archive(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse("no archive is written", "read a file with repo.commit(sha).tree / path")

    def clone(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse("it is not cloned", "`tracework fetch SUBJECT` updates the mirror")


def _remove_view(view: Path, git: ReadOnlyGit) -> None:
    git.clear_cache()  # the persistent cat-file processes
    shutil.rmtree(view, ignore_errors=True)


def make_view(mirror: Mirror, head: str, refs: str | None = None) -> Path:
    """A new view of ``mirror`` (see the module) whose ``HEAD`` is commit ``head``;
    ``refs`` are the mirror's branches and tags as :func:`_refs` lists them."""
    if not FULL_OID.fullmatch(head):
        raise GitError(f"{head!r} is not a full commit id")
    objects = (mirror.git_dir / "objects").resolve()
    if "\n" in str(objects):
        raise GitError(f"the mirror's path cannot be named in an alternates file: {objects}")
    view = Path(tempfile.mkdtemp(prefix="tracework-history-"))
    try:
        (view / "objects" / "info").mkdir(parents=True)
        (view / "refs").mkdir()
        (view / "objects" / "info" / "alternates").write_text(f"{objects}\n", encoding="utf-8")
        (view / "packed-refs").write_text(_refs(mirror) if refs is None else refs, "utf-8")
        (view / "config").write_text(VIEW_CONFIG, encoding="utf-8")
        (view / "HEAD").write_text(f"{head}\n", encoding="ascii")
    except BaseException:
        shutil.rmtree(view, ignore_errors=True)
        raise
    return view


def _refs(mirror: Mirror) -> str:
    """The mirror's branches and tags, as lines of a ``packed-refs`` file."""
    out = run_git(
        mirror.git_dir, ["for-each-ref", "--format=%(objectname) %(refname)", *_REFS]
    ).stdout.decode("utf-8", errors="surrogateescape")
    return "".join(f"{line}\n" for line in out.splitlines() if line)


#: Open views, by mirror and head: the refs they copied, and the repo.
_OPEN: dict[tuple[str, str], tuple[str, HistoryRepo]] = {}


def history(mirror: Mirror, head: str) -> HistoryRepo:
    """The read-only repo of ``mirror`` at ``head``, reused while the mirror's refs are
    those the view copied (a fetch since makes a new view)."""
    key = (str(mirror.git_dir), head)
    refs = _refs(mirror)
    found = _OPEN.get(key)
    if found is not None and found[0] == refs and Path(found[1].git_dir).is_dir():
        return found[1]
    if found is not None:
        found[1].close()
    repo = HistoryRepo(make_view(mirror, head, refs), mirror.git_dir)
    _OPEN[key] = (refs, repo)
    return repo
