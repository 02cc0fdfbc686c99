"""What a build may take and reach, judged without a sandbox: the lock's sources, the
registry proxy, and files read on the host only through folders (fast, no network)."""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path

import pytest

from tracework.capture.errors import CaptureConfigError, NotRegular
from tracework.capture.hostfiles import read_regular, sha256_regular
from tracework.capture.lock import LockFiles, plan_lock
from tracework.capture.registry import PYPI, Registry, RegistryProxy, registry_setting

WHEEL = "https://files.pythonhosted.org/packages/aa/bb/x-1.0-py3-none-any.whl"


def _lock(*packages: str, members: str = "") -> LockFiles:
    head = 'version = 1\nrevision = 3\nrequires-python = ">=3.8"\n\n'
    if members:
        head += f"[manifest]\nmembers = [{members}]\n\n"
    root = '[[package]]\nname = "app"\nversion = "0.1.0"\nsource = { editable = "." }\n'
    return LockFiles((head + "\n".join([root, *packages])).encode(), b"")


def _package(name: str, source: str, wheels: str = "") -> str:
    return f'[[package]]\nname = "{name}"\nversion = "1.0"\nsource = {source}\n{wheels}'


def test_registry_packages_and_the_project_itself_pass():
    plan = plan_lock(
        _lock(
            _package(
                "x",
                '{ registry = "https://pypi.org/simple" }',
                f'wheels = [{{ url = "{WHEEL}", hash = "sha256:00" }}]\n',
            ),
            _package("member", '{ editable = "packages/member" }'),
            members='"app", "member"',
        ),
        PYPI,
        (),
    )
    assert plan.opted_in == ()
    assert plan.hosts == {("pypi.org", 443), ("files.pythonhosted.org", 443)}


@pytest.mark.parametrize(
    ("source", "named"),
    [
        ('{ path = "wheels/x-1.0-py3-none-any.whl" }', "x (path wheels/x-1.0-py3-none-any.whl)"),
        ('{ directory = "vendor/x" }', "x (directory vendor/x)"),
        ('{ editable = "../x" }', "x (editable ../x)"),
        ('{ git = "https://example.org/x.git?rev=main#abc" }', "x (git https://example.org/x.git"),
        ('{ url = "https://example.org/x.whl" }', "x (url https://example.org/x.whl)"),
        ('{ registry = "http://127.0.0.1:9/simple" }', "x (registry http://127.0.0.1:9/simple"),
    ],
    ids=["path", "directory", "editable", "git", "url", "another-registry"],
)
def test_every_other_source_is_refused_by_name(source, named):
    with pytest.raises(CaptureConfigError) as refused:
        plan_lock(_lock(_package("x", source)), PYPI, ())
    assert named in refused.value.message
    assert 'allow_sources = ["NAME"]' in (refused.value.hint or "")


def test_a_registry_package_with_a_file_elsewhere_is_refused():
    stray = (
        'wheels = [{ url = "http://127.0.0.1:8000/x-1.0-py3-none-any.whl", hash = "sha256:00" }]\n'
    )
    with pytest.raises(CaptureConfigError) as refused:
        plan_lock(_lock(_package("x", '{ registry = "https://pypi.org/simple" }', stray)), PYPI, ())
    assert "x (a file at http://127.0.0.1:8000/x-1.0-py3-none-any.whl" in refused.value.message


def test_an_opted_in_package_passes_and_its_host_is_the_only_other():
    lock = _lock(
        _package("x", '{ path = "wheels/x.whl" }'),
        _package("Y_Lib", '{ git = "https://example.org/y.git?rev=v1#abc" }'),
    )
    plan = plan_lock(lock, PYPI, ("x", "y-lib"))
    assert plan.opted_in == ("x", "y-lib")
    assert plan.hosts == PYPI.hosts() | {("example.org", 443)}


def test_an_opted_in_path_must_stay_inside_the_tree():
    with pytest.raises(CaptureConfigError, match="outside the subject's tree"):
        plan_lock(_lock(_package("x", '{ path = "/etc/x.whl" }')), PYPI, ("x",))


def test_a_lock_that_is_not_toml_is_refused_without_quoting_it():
    secret = "tw-secret-in-a-broken-lock"
    with pytest.raises(CaptureConfigError) as refused:
        plan_lock(LockFiles(f"[[package]\n{secret} =\n".encode(), b""), PYPI, ())
    assert secret not in str(refused.value)


def test_the_registry_setting():
    assert registry_setting({}) == PYPI
    local = registry_setting({"capture": {"index": "http://127.0.0.1:8080/simple/"}})
    assert local == Registry("http://127.0.0.1:8080/simple", ("http://127.0.0.1:8080/",))
    with pytest.raises(CaptureConfigError):
        registry_setting({"capture": {"index": "file:///srv/simple"}})


def _echo_server() -> socket.socket:
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                client, _ = server.accept()
            except OSError:
                return
            with client:
                data = client.recv(4096)
                client.sendall(b"echo:" + data)

    threading.Thread(target=serve, daemon=True).start()
    return server


def _ask(path: Path, request: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(5)
        sock.connect(str(path))
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(4096):
            chunks.append(chunk)
            head = b"".join(chunks)
            if head.startswith(b"HTTP/1.1 200") and b"\r\n\r\n" in head:
                sock.sendall(b"ping")
                chunks.append(sock.recv(4096))
                break
    return b"".join(chunks)


def test_the_proxy_reaches_its_hosts_and_nothing_else(tmp_path):
    allowed, other = _echo_server(), _echo_server()
    port, other_port = allowed.getsockname()[1], other.getsockname()[1]
    try:
        with RegistryProxy(tmp_path / "proxy.sock", [("127.0.0.1", port)]) as proxy:
            tunnel = _ask(proxy.path, f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode())
            assert tunnel.startswith(b"HTTP/1.1 200") and tunnel.endswith(b"echo:ping")
            plain = _ask(
                proxy.path,
                f"GET http://127.0.0.1:{port}/simple/x/ HTTP/1.1\r\nHost: a\r\n"
                "Proxy-Connection: keep-alive\r\n\r\n".encode(),
            )
            # the origin is asked in origin form, one request per connection
            assert plain.startswith(b"echo:GET /simple/x/ HTTP/1.1\r\nHost: a\r\n")
            assert b"Connection: close" in plain and b"Proxy-Connection" not in plain
            refused = _ask(proxy.path, f"CONNECT 127.0.0.1:{other_port} HTTP/1.1\r\n\r\n".encode())
            assert refused.startswith(b"HTTP/1.1 403")
            assert proxy.refused == [f"CONNECT 127.0.0.1:{other_port} HTTP/1.1"]
    finally:
        allowed.close()
        other.close()


def test_host_reads_refuse_links_on_the_way_and_at_the_end(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("the caller's own\n")
    tree = tmp_path / "tree"
    (tree / "real").mkdir(parents=True)
    (tree / "real" / "file.txt").write_text("tree's own\n")
    (tree / "linked-file").symlink_to(secret)
    (tree / "linked-folder").symlink_to(tmp_path)
    os.mkfifo(tree / "pipe")
    assert read_regular(tree, "real/file.txt", 100) == b"tree's own\n"
    assert len(sha256_regular(tree, "real/file.txt")) == 64
    for rel, said in [
        ("linked-file", "linked-file is a symbolic link"),
        ("linked-folder/secret", "linked-folder is a symbolic link on the way"),
        ("pipe", "pipe is not a regular file"),
        ("real/../linked-file", "is not a path inside the tree"),
        ("/etc/passwd", "is not a path inside the tree"),
        ("missing", "missing does not exist"),
    ]:
        with pytest.raises(NotRegular) as refused:
            read_regular(tree, rel, 100)
        assert said in refused.value.message
        assert "caller's own" not in str(refused.value)
    with pytest.raises(NotRegular, match="larger than 4 bytes"):
        read_regular(tree, "real/file.txt", 4)
