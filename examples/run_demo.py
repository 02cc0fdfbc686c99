"""The demo: build two subjects, then show the workbench on them.

Run by ``make demo`` from a fresh clone.  Each step is a real ``tracework``
command, printed before it runs, in this repository's own workspace:

1. build the subject repositories, Larkspur and Fennel (commits with fixed dates,
   so fixed ids);
2. fetch their mirrors (``sources/*.toml`` are committed);
3. capture Fennel at its pin (``captures/fennel.toml``, ``captures/fennel.py``): its
   own assistant driven by a scripted model, isolated, run twice and required to give
   byte-identical files — two cases FAIL, two PASS — and keep it in Fennel's register
   by hash (``register add-capture``: the same capture gives the same entry);
4. check the committed registers ``registers/*.yaml`` at their pins, the capture's
   files among them;
5. render ``notebooks/larkspur.ipynb`` and ``notebooks/fennel.ipynb`` at their pins:
   every check holds; Fennel's two routes are observed, citing the capture;
6. check Larkspur at its newest commit, then ``rerender --all --latest``: moved,
   changed and missing evidence, the commit at which each changed quote changed (a
   formatting-only change named as such), a broken evidenced absence, a vanished
   diagram identifier, and the records and rubric marks that need re-review;
7. publish the site: an index of the reports, each report's renders, its register,
   and the matrix of both systems against ``registers/rubrics/retention.yaml``.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))

from build_subject import SUBJECTS, build  # noqa: E402


def tracework(*args: str, expect: tuple[int, ...] = (0,)) -> None:
    """Run one tracework command in the repository's workspace, echoing it first."""
    print(f"\n$ tracework {shlex.join(args)}", flush=True)
    proc = subprocess.run([sys.executable, "-m", "tracework", *args], cwd=ROOT, check=False)
    if proc.returncode not in expect:
        sys.exit(f"demo step failed (exit {proc.returncode}): tracework {shlex.join(args)}")


def main() -> None:
    built = {name: build(name=name) for name in SUBJECTS}
    for name, commits in built.items():
        print(f"built the demo subject examples/build/{name}:")
        for n, commit in enumerate(commits, 1):
            print(f"  commit {n}: {commit}")
    for name in SUBJECTS:
        tracework("fetch", name)
    tracework("capture", "env", "fennel")
    tracework("capture", "fennel", "--repeat", "2")
    # the register holds the capture's files by hash (the same capture: the same entry)
    tracework("register", "add-capture", "fennel", "fennel")
    for name in SUBJECTS:
        tracework("check", name)
    for name in SUBJECTS:
        tracework("render", name)
    pin, newest = built["larkspur"][0], built["larkspur"][-1]
    tracework("check", "larkspur", "--at", newest[:12], expect=(1,))
    tracework("rerender", "--all", "--latest", "--analysis-date", "2026-03-25")
    tracework("publish")
    reports = ROOT / "reports" / "larkspur"
    print("\nReports (open them in a browser, straight from disk):")
    for commit, what in (
        (pin, "at the pin, every check holds"),
        (newest, "at the newest commit, with drift"),
    ):
        print(f"  {reports / commit[:12] / 'report.html'}  ({what})")
    print(f"\nThe published site: {ROOT / 'reports' / 'site' / 'index.html'}")
    capture = ROOT / "captures" / "fennel" / built["fennel"][0][:12]
    print(f"The capture of Fennel: {capture / 'results.json'} (and transcripts/)")


if __name__ == "__main__":
    main()
