"""What ran, made reproducible and bounded: the output preprocessors, alone, in order,
and listed in an nbconvert exporter as any preprocessor is; and the kernel clients of a
kernel given for run after run."""

from __future__ import annotations

import json
from typing import Any

import nbformat
from nbconvert import NotebookExporter
from traitlets.config import Config

from tracework.render.execution import _clients_of
from tracework.render.outputs import (
    CapOutputsPreprocessor,
    StripVolatilePreprocessor,
    what_ran,
)


def _executed() -> nbformat.NotebookNode:
    """A notebook as papermill leaves it: timings, paths and a random id in it."""
    injected = nbformat.v4.new_code_cell(
        "register = 'demo'", metadata={"tags": ["injected-parameters"], "papermill": {}}
    )
    injected.id = "a1b2c3d4-random"
    printed = nbformat.v4.new_code_cell(
        "print('x' * 5000)",
        metadata={
            "tags": ["evidence"],
            "execution": {"iopub.execute_input": "2026-03-25T10:00:00.000Z"},
            "papermill": {"duration": 0.25, "status": "completed"},
        },
        outputs=[nbformat.v4.new_output("stream", name="stdout", text="x" * 5000 + "\n")],
    )
    printed.id = "printed"
    nb = nbformat.v4.new_notebook(cells=[injected, printed])
    nb.metadata["papermill"] = {
        "parameters": {"register": "demo"},
        "input_path": "/home/analyst/notebooks/demo.ipynb",
        "start_time": "2026-03-25T10:00:00",
        "duration": 1.5,
    }
    return nb


def test_the_volatile_keys_go_and_the_rest_stays():
    nb, _ = StripVolatilePreprocessor().preprocess(_executed(), {})
    injected, printed = nb.cells
    assert nb.metadata["papermill"] == {"parameters": {"register": "demo"}}
    assert injected.id == "injected-parameters"
    assert injected.metadata == {"tags": ["injected-parameters"]}
    assert printed.metadata == {"tags": ["evidence"]}
    assert printed.outputs[0].text == "x" * 5000 + "\n"  # outputs are the cap's business


def test_what_ran_is_the_preprocessors_in_order_as_an_exporter_runs_them():
    """Listed in nbconvert's exporter and configured as nbconvert's own preprocessors are,
    they make what :func:`what_ran` makes."""
    config = Config()
    config.CapOutputsPreprocessor.output_cap = 1024
    exporter = NotebookExporter(
        config=config, preprocessors=[StripVolatilePreprocessor, CapOutputsPreprocessor]
    )
    exported, _ = exporter.from_notebook_node(_executed())
    made = what_ran(_executed(), 1024)
    assert nbformat.reads(exported, as_version=4) == json.loads(json.dumps(made))
    assert "cut from the middle of this output" in made.cells[1].outputs[0].text


def test_a_kernel_given_for_run_after_run_lists_each_runs_clients_alone():
    class Manager:
        made = 0

        def client(self, **kwargs: Any) -> object:
            Manager.made += 1
            return object()

    km = Manager()
    first = _clients_of(km)
    km.client()
    second = _clients_of(km)
    made = km.client()
    assert Manager.made == 2
    assert len(first) == 1 and second == [made]  # not the first run's list, not twice
