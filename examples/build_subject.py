"""Build the demo subject, Larkspur, into a git repository with fixed dates.

Each entry of ``larkspur/commits.toml`` overlays a folder of files on the previous
tree and commits it with a fixed author and committer date, so the commit ids are
identical on every machine.  The repository is rebuilt from scratch each time.

    python examples/build_subject.py [TARGET]      # default: examples/build/larkspur
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
SNAPSHOTS = HERE / "larkspur"
DEFAULT_TARGET = HERE / "build" / "larkspur"


def _git(repo: Path, *args: str, date: str | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL="/dev/null",
        GIT_AUTHOR_NAME="Larkspur Maintainers",
        GIT_AUTHOR_EMAIL="maintainers@larkspur.invalid",
        GIT_COMMITTER_NAME="Larkspur Maintainers",
        GIT_COMMITTER_EMAIL="maintainers@larkspur.invalid",
    )
    if date:
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    out = subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
    return out.stdout.decode().strip()


def build(target: Path = DEFAULT_TARGET) -> list[str]:
    """(Re)build the subject repository; returns its commit ids, oldest first."""
    plan = tomllib.loads((SNAPSHOTS / "commits.toml").read_text(encoding="utf-8"))["commit"]
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    _git(target, "init", "-q", "-b", "main")
    commits = []
    for step in plan:
        for rel in step.get("remove", []):
            (target / rel).unlink()
        source = SNAPSHOTS / step["tree"]
        for path in sorted(source.rglob("*")):
            if path.is_file():
                dest = target / path.relative_to(source)
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(path.read_bytes())
        _git(target, "add", "-A")
        _git(target, "commit", "-q", "-m", step["message"], date=step["date"])
        commits.append(_git(target, "rev-parse", "HEAD"))
    return commits


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_TARGET
    for commit in build(out):
        print(commit)
