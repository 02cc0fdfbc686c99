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
    project = b'[project]\nname = "app"\nversion = "0.1.0"\n'
    return LockFiles((head + "\n".join([root, *packages])).encode(), project)


def _package(name: str, source: str, wheels: str = "") -> str:
    return f'[[package]]\nname = "{name}"\nversion = "1.0"\nsource = {source}\n{wheels}'


def test_registry_packages_and_the_project_itself_pass(tmp_path):
    (tmp_path / "packages" / "member").mkdir(parents=True)
    (tmp_path / "packages" / "member" / "pyproject.toml").write_text('[project]\nname = "member"\n')
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
        tmp_path,
    )
    assert plan.opted_in == ()
    assert plan.source_hosts == set()


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
    assert plan.source_hosts == {("example.org", 443)}


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/x.whl",
        "https://[::1]/x.whl",
        "https://10.0.0.7/x.whl",
        "https://169.254.169.254/x.whl",
        "https://pkgs.example.dev:2375/x.whl",
    ],
)
def test_an_opted_in_url_must_be_public_and_on_the_web_s_ports(url):
    with pytest.raises(CaptureConfigError, match="reached only by name or public address"):
        plan_lock(_lock(_package("x", f'{{ url = "{url}" }}')), PYPI, ("x",))


def test_a_package_at_the_project_s_folder_under_another_name_is_refused(tmp_path):
    """``--no-install-workspace`` skips members by name: a package named otherwise at
    the project's folder (or a member's) would be built and installed, so it is judged
    like any other source."""
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "pyproject.toml").write_text('[project]\nname = "lib"\n')
    for package, named in (
        (
            _package("sneaky", '{ editable = "." }'),
            "sneaky (editable ., a folder whose project is not sneaky)",
        ),
        (
            _package("other", '{ virtual = "lib" }'),
            "other (virtual lib, a folder whose project is not other)",
        ),
    ):
        with pytest.raises(CaptureConfigError) as refused:
            plan_lock(_lock(package, members='"app", "lib", "other"'), PYPI, (), tmp_path)
        assert named in refused.value.message
    plan = plan_lock(_lock(_package("sneaky", '{ editable = "." }')), PYPI, ("sneaky",), tmp_path)
    assert plan.opted_in == ("sneaky",)


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
            for bad in (
                b"GET http://h:99999/ HTTP/1.1\r\n\r\n",
                b"GET http://[h/ HTTP/1.1\r\n\r\n",
            ):
                assert _ask(proxy.path, bad).startswith(b"HTTP/1.1 403")
    finally:
        allowed.close()
        other.close()


def test_a_lock_s_host_is_reached_only_at_a_public_address(tmp_path):
    """An opted-in source's name is the subject's choice: one that resolves to loopback
    (``localhost``, or a public-looking name rebound there) reaches nothing."""
    service = _echo_server()  # a service on the caller's own loopback
    port = service.getsockname()[1]
    try:
        with RegistryProxy(tmp_path / "p.sock", [], [("localhost", port)]) as proxy:
            answer = _ask(proxy.path, f"CONNECT localhost:{port} HTTP/1.1\r\n\r\n".encode())
            assert answer.startswith(b"HTTP/1.1 502")
    finally:
        service.close()


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


def test_an_opted_in_folder_keys_the_environment_by_commit(tmp_path):
    """A package built from the tree is built from one commit's files: with packages
    opted in, two commits of the same lock are two environments; without, one."""
    from tracework.capture.config import CaptureConfig
    from tracework.capture.environment import environment_key
    from tracework.capture.interpreter import Interpreter

    trees = []
    for commit in ("a" * 40, "b" * 40):
        tree = tmp_path / commit
        tree.mkdir()
        (tree / "uv.lock").write_text('version = 1\nrevision = 3\nrequires-python = ">=3.8"\n')
        (tree / "pyproject.toml").write_text('[project]\nname = "app"\nversion = "0.1.0"\n')
        trees.append(tree)
    python = Interpreter("/usr/bin/python3", "3.11.2", "/usr")
    base = {"subject": "s", "commit": "a" * 40, "register": "r", "python": "3.11", "lock": "uv"}
    keys = {}
    for opted in ((), ("sneaky",)):
        config = CaptureConfig.model_validate(base | {"allow_sources": list(opted)})
        keys[opted] = {environment_key(config, t, python, PYPI)[0] for t in trees}
    assert len(keys[()]) == 1 and len(keys[("sneaky",)]) == 2
