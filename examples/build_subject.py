"""Build a demo subject (Larkspur or Fennel) into a git repository with fixed dates.

Each entry of ``examples/NAME/commits.toml`` overlays a folder of files on the previous
tree and commits it with a fixed author and committer date, so the commit ids are
identical on every machine.  The repository is rebuilt from scratch each time.

    python examples/build_subject.py [NAME [TARGET]]   # default: larkspur, examples/build/NAME
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: The demo's subjects, in the order the demo builds them.
SUBJECTS = ("larkspur", "fennel")


def _git(repo: Path, *args: str, name: str, date: str | None = None) -> str:
    """Run git in ``repo`` as subject ``name``'s maintainers (part of the fixed ids)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL="/dev/null",
        GIT_AUTHOR_NAME=f"{name.capitalize()} Maintainers",
        GIT_AUTHOR_EMAIL=f"maintainers@{name}.invalid",
        GIT_COMMITTER_NAME=f"{name.capitalize()} Maintainers",
        GIT_COMMITTER_EMAIL=f"maintainers@{name}.invalid",
    )
    if date:
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    out = subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
    return out.stdout.decode().strip()


def build(target: Path | None = None, name: str = "larkspur") -> list[str]:
    """(Re)build subject ``name`` at ``target`` (default ``examples/build/NAME``);
    returns its commit ids, oldest first."""
    snapshots = HERE / name
    target = target or HERE / "build" / name
    plan = tomllib.loads((snapshots / "commits.toml").read_text(encoding="utf-8"))["commit"]
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    _git(target, "init", "-q", "-b", "main", name=name)
    commits = []
    for step in plan:
        for rel in step.get("remove", []):
            (target / rel).unlink()
        source = snapshots / step["tree"]
        for path in sorted(source.rglob("*")):
            if path.is_file():
                dest = target / path.relative_to(source)
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(path.read_bytes())
        _git(target, "add", "-A", name=name)
        _git(target, "commit", "-q", "-m", step["message"], name=name, date=step["date"])
        commits.append(_git(target, "rev-parse", "HEAD", name=name))
    return commits


def copy_demo(workspace: Path, name: str = "larkspur") -> list[str]:
    """Copy demo report ``name``'s committed inputs (subject definition, notebook,
    register, the rubrics and tracework.toml) into an initialised workspace, and build
    its subject there; returns the subject's commit ids, oldest first."""
    repo = HERE.parent
    shutil.copy(repo / "tracework.toml", workspace / "tracework.toml")
    for rel in (f"sources/{name}.toml", f"notebooks/{name}.ipynb", f"registers/{name}.yaml"):
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(repo / rel, workspace / rel)
    shutil.copytree(repo / "registers" / "rubrics", workspace / "registers" / "rubrics")
    return build(workspace / "examples" / "build" / name, name)


if __name__ == "__main__":
    subject = sys.argv[1] if len(sys.argv) > 1 else "larkspur"
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else None
    for commit in build(out, subject):
        print(commit)
