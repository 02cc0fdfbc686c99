"""Build a capture's environment inside the build's sandbox: uv's steps, one by one.

tracework starts this file with the base Python the environment is made from, as
``python -I -S tracework_build.py FD PLAN``, inside a sandbox whose only writable
folders are the new environment (``/capture/env``) and uv's private cache, and whose
only way out is the registry proxy's Unix socket (see
:mod:`tracework.capture.registry`).  It

1. listens on the sandbox's own loopback and carries every connection made there to
   that socket, so that uv can be given an ordinary HTTP proxy;
2. runs each planned command (``uv venv``, ``uv sync --frozen``, ``uv pip install``)
   with the planned environment and that proxy, its output going to the build's log;
3. reports each command's exit status on the results socket ``FD``, and stops at the
   first that fails.

Whatever these commands run (a package's build backend, a ``.pth`` file while
byte-compiling) runs here, in the sandbox, under its limits.  Standard library only,
Python 3.8 syntax: the base Python may be any version a capture declares.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import subprocess
import sys
import threading

REGISTRY_SOCKET = "/capture/registry.sock"


def _splice(a: socket.socket, b: socket.socket) -> None:
    pairs = {a: b, b: a}
    try:
        while pairs:
            ready, _, _ = select.select(list(pairs), [], [], 300)
            if not ready:
                return
            for source in ready:
                data = source.recv(1 << 16)
                sink = pairs[source]
                if data:
                    sink.sendall(data)
                    continue
                del pairs[source]
                with contextlib.suppress(OSError):
                    sink.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    finally:
        a.close()
        b.close()


def _carry(client: socket.socket) -> None:
    out = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        out.connect(REGISTRY_SOCKET)
    except OSError:
        client.close()
        out.close()
        return
    _splice(client, out)


def _forwarder() -> int:
    """Listen on loopback; each connection goes to the registry proxy.  Its port."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(64)

    def serve() -> None:
        while True:
            client, _ = server.accept()
            threading.Thread(target=_carry, args=(client,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    return int(server.getsockname()[1])


def main(argv: list[str]) -> int:
    fd, plan = int(argv[1]), json.loads(argv[2])

    def send(message: dict[str, object]) -> None:
        data = (json.dumps(message, separators=(",", ":")) + "\n").encode()
        while data:
            data = data[os.write(fd, data) :]

    send({"t": "hello", "protocol": 1})
    proxy = f"http://127.0.0.1:{_forwarder()}"
    env = dict(plan["env"])
    for key in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        env[key] = proxy
    env["NO_PROXY"] = env["no_proxy"] = ""
    os.makedirs(env["HOME"], exist_ok=True)
    for step in plan["steps"]:
        sys.stdout.write("$ " + step["what"] + "\n")
        sys.stdout.flush()
        code = subprocess.call(step["argv"], env=env, stdin=subprocess.DEVNULL, cwd="/")
        send({"t": "step", "what": step["what"], "code": code})
        if code != 0:
            return 1
    send({"t": "done"})
    return 0


if __name__ == "__main__":
    status = main(sys.argv)
    sys.stdout.flush()
    os._exit(status)  # the forwarder's threads never hold the exit up
