"""The client a render runs its notebook through (:func:`tracework.kernels.warm.ready_client`):
ready once the kernel's IOPub has answered, with nothing of the kernel's output lost,
and a kernel that died a clear error, never a wait without end."""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest

from tracework.kernels import warm as kernels

pytestmark = pytest.mark.slow  # kernels: not in `make test-fast`


@pytest.fixture
def km(tmp_path: Path) -> Iterator[Any]:
    booting = kernels.WarmKernel(tmp_path)
    manager = booting.take()
    assert manager is not None
    manager.client_factory = kernels.ready_client()
    yield manager
    booting.discard()
    kernels.shutdown(manager)


def _run(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """``asyncio.run`` in a thread of its own: a test before this one in the session may
    leave an event loop running in the main thread (a browser test's), where
    ``asyncio.run`` refuses to start."""
    result: list[Any] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            result.append(asyncio.run(coroutine))
        except BaseException as exc:  # handed to the test's thread
            failure.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return result[0]


async def _outputs_of(client: Any, code: str) -> list[str]:
    """The stream text a cell of ``code`` prints, read from IOPub up to its idle status."""
    asked = client.execute(code)
    texts = []
    while True:
        msg = await client.iopub_channel.get_msg(timeout=30)
        if msg["parent_header"].get("msg_id") != asked:
            continue
        if msg["msg_type"] == "stream":
            texts.append(msg["content"]["text"])
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return texts


def test_a_ready_client_receives_the_first_cell_s_output(km):
    async def first_cell() -> list[str]:
        client = km.client()
        client.start_channels()
        try:
            await client.wait_for_ready(timeout=60)
            with pytest.raises(queue.Empty):  # the kernel_info's messages were all read
                await client.iopub_channel.get_msg(timeout=0.3)
            return await _outputs_of(client, "print('first')")
        finally:
            client.stop_channels()

    assert _run(first_cell()) == ["first\n"]


def test_a_dead_kernel_is_an_error_not_a_wait(km):
    kernels.shutdown(km)  # killed and reaped

    async def ready() -> None:
        client = km.client()
        client.start_channels()
        try:
            await client.wait_for_ready(timeout=60)
        finally:
            client.stop_channels()

    with pytest.raises(RuntimeError, match="died"):
        _run(asyncio.wait_for(ready(), timeout=30))
