"""The ``tracework`` Jupyter kernelspec: this environment's Python, for JupyterLab and
papermill alike, so a notebook runs with the packages tracework itself runs with."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tracework.errors import RenderError
from tracework.fsio import write_atomic

KERNEL_NAME = "tracework"


def ensure_kernelspec() -> str:
    """Write the ``tracework`` kernelspec for this interpreter if it is missing or stale.

    It lives in ``<sys.prefix>/share/jupyter/kernels/tracework`` (the project's
    ``.venv`` in this repository), so papermill and JupyterLab both run notebooks with
    the environment tracework itself runs in.
    """
    spec = {
        # the kernel's own log (transport warnings, shutdown noise) is not for readers;
        # cell errors still reach the notebook as error outputs
        "argv": [
            sys.executable,
            "-m",
            "ipykernel_launcher",
            "-f",
            "{connection_file}",
            "--IPKernelApp.log_level=CRITICAL",
        ],
        "display_name": "tracework (Python 3)",
        "language": "python",
        "metadata": {"debugger": True},
    }
    text = json.dumps(spec, indent=1, sort_keys=True) + "\n"
    for base in _kernel_dirs():
        target = base / KERNEL_NAME / "kernel.json"
        try:
            if target.is_file() and target.read_text(encoding="utf-8") == text:
                return KERNEL_NAME
            target.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(target, text)
            return KERNEL_NAME
        except OSError:
            continue
    raise RenderError(
        "cannot write a jupyter kernelspec for tracework",
        hint="check that the environment's share/jupyter folder is writable",
    )


def _kernel_dirs() -> list[Path]:
    from jupyter_core.paths import jupyter_data_dir

    return [
        Path(sys.prefix) / "share" / "jupyter" / "kernels",
        Path(jupyter_data_dir()) / "kernels",
    ]
