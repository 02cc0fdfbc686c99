"""The model-driven arm and its one endpoint: a capture with ``[model]`` reaches the
declared local endpoint at its own address inside the sandbox, and nothing else; every
request and reply is kept with the trial it was sent in; N trials of each condition run,
never graded; the manifest says what the server says about its model.

The model server is a stand-in started by the test on the host's loopback, speaking an
OpenAI-style ``/v1/models`` and ``/v1/chat/completions``: nothing is downloaded.
"""

from __future__ import annotations

import http.server
import json
import socket
import threading

import pytest

import tracework
from capture_setup import capture_workspace, one_error
from tracework.capture.config import ModelConfig
from tracework.capture.exchanges import records, split
from tracework.capture.model import Carried, Relay
from tracework.capture.protocol import ProtocolProblem, parse

BACKENDS = ["bwrap", "unshare"]
MODELS = {"object": "list", "data": [{"id": "stand-in-1", "object": "model", "owned_by": "tests"}]}


class StandIn:
    """A scripted model server on the host's loopback; ``seen`` lists each request as
    (method, target, body) in the order it came."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, bytes]] = []
        lock = threading.Lock()
        seen = self.seen

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _send(self, status: int, body: bytes, *, chunked: bool = False) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                if chunked:
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for part in (body[:10], body[10:]):
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                    self.wfile.write(b"0\r\n\r\n")
                else:
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)

            def do_GET(self) -> None:
                with lock:
                    seen.append(("GET", self.path, b""))
                if self.path == "/v1/models":
                    self._send(200, json.dumps(MODELS).encode())
                else:
                    self._send(404, b'{"error": "not found"}')

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with lock:
                    seen.append(("POST", self.path, body))
                    number = len(seen)
                if self.path != "/v1/chat/completions":
                    self._send(404, b'{"error": "not found"}')
                    return
                asked = json.loads(body)
                said = asked["messages"][-1]["content"]
                reply = {
                    "id": f"chatcmpl-{number}",
                    "object": "chat.completion",
                    "model": asked["model"],
                    "choices": [
                        {
                            "index": 0,
                            "message": {
                                "role": "assistant",
                                "content": f"reply {number} to {said}",
                            },
                            "finish_reason": "stop",
                        }
                    ],
                }
                self._send(200, json.dumps(reply).encode(), chunked=bool(asked.get("stream")))

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._server.handle_error = lambda *args: None  # a client the relay cut: no trace
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def stand_in():
    server = StandIn()
    yield server
    server.close()


@pytest.fixture
def decoy():
    """Another port on the host's loopback: nothing may ever connect to it."""
    sock = socket.create_server(("127.0.0.1", 0))
    sock.settimeout(0.1)
    yield sock
    sock.close()


def _model(endpoint: str, extra: str = "") -> str:
    return f'\n[model]\nendpoint = "{endpoint}"\n{extra}'


ARM_HARNESS = """\
import http.client, json, os, socket
from tracework_harness import capture

PORT, DECOY = {port}, {decoy}
kept = http.client.HTTPConnection("127.0.0.1", PORT, timeout=20)  # one, kept alive


def ask(connection, content, stream=False):
    body = {{"model": "stand-in-1", "messages": [{{"role": "user", "content": content}}],
            "stream": stream}}
    connection.request("POST", "/v1/chat/completions", body=json.dumps(body),
                       headers={{"Content-Type": "application/json"}})
    reply = connection.getresponse()
    return reply.status, reply.read().decode()


def attempt(action):
    try:
        return "succeeded: " + repr(action())[:100]
    except Exception as exc:
        return "failed: " + type(exc).__name__


with capture.case("S-01", "What can a scripted case reach?") as c:
    decoy = attempt(lambda: socket.create_connection(("127.0.0.1", DECOY), 3).close())
    elsewhere = attempt(lambda: socket.create_connection(("10.255.255.1", 80), 3).close())
    scripted = attempt(lambda: ask(http.client.HTTPConnection("127.0.0.1", PORT, timeout=5), "x"))
    c.record("the decoy", decoy)
    c.record("another address", elsewhere)
    c.record("the endpoint from a scripted case", scripted)
    c.check("the decoy port is closed", holds=decoy.startswith("failed"), observed=decoy)
    c.check("nothing else is routed", holds=elsewhere.startswith("failed"), observed=elsewhere)
    c.check("a scripted case gets no reply", holds=scripted.startswith("failed"),
            observed=scripted)
    c.check("the relay's folder is there", holds=os.path.isdir("/capture/model"),
            observed=str(os.listdir("/capture/model")))

for trial in capture.trials("M-01", "Does the stand-in answer each trial?",
                            ["with memory", "without memory"]):
    status, reply = ask(kept, "%s #%d" % (trial.condition, trial.number),
                        stream=trial.number == 3)
    trial.record("status", status)
    trial.record("reply", json.loads(reply)["choices"][0]["message"]["content"])
    trial.observe("it answered " + str(status), criterion="the reply names the trial")

with capture.case("M-02", "Can a proxy-style request reach the decoy?", arm="model-driven") as c:
    raw = socket.create_connection(("127.0.0.1", PORT), 5)
    raw.sendall(("GET http://127.0.0.1:%d/ HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\n"
                 "Connection: close\\r\\n\\r\\n" % (DECOY, DECOY)).encode())
    got = b""
    while True:
        part = raw.recv(65536)
        if not part:
            break
        got += part
    c.record("reply", got.decode())
    c.observe(got.split(b"\\r\\n", 1)[0].decode())

capture.table("replies by condition", ["condition", "trials"],
              [["with memory", 3], ["without memory", 3]], arm="model-driven")
"""


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_the_arm_reaches_the_endpoint_and_nothing_else(pinned, tw, stand_in, decoy, backend):
    setup = capture_workspace(pinned, tw)
    setup.isolation(backend)
    harness = ARM_HARNESS.format(port=stand_in.port, decoy=decoy.getsockname()[1])
    setup.write("arm", harness, toml=_model(stand_in.endpoint, 'info = ["/v1/models"]\n'))
    result = setup.capture("arm", "--repeat", "2", "--json")
    assert result.exit_code == 0, result.output
    with pytest.raises(TimeoutError):
        decoy.accept()  # nothing ever connected to the other port
    folder = setup.folder("arm")

    scripted = json.loads((folder / "results.json").read_text())
    s01 = scripted["cases"][0]
    assert s01["status"] == "PASS", s01["checks"]
    assert [c["id"] for c in scripted["cases"]] == ["S-01"]

    arm = json.loads((folder / "model-arm.json").read_text())
    m01, m02 = arm["cases"]
    assert m01["arm"] == "model-driven" and m01["status"] is None
    assert m01["observed"] == "6 trials: 3 of each of 2 conditions"
    assert m01["criterion"] == "the reply names the trial"
    order = [(t["condition"], t["number"]) for t in m01["trials"]]
    assert order == [
        ("with memory", 1),
        ("without memory", 1),
        ("with memory", 2),
        ("without memory", 2),
        ("with memory", 3),
        ("without memory", 3),
    ]
    assert all(t["observed"] == "it answered 200" for t in m01["trials"])
    assert arm["tables"][0]["name"] == "replies by condition"

    lines = (folder / "model-arm" / "exchanges.jsonl").read_text().splitlines()
    exchanges = {e["id"]: e for e in map(json.loads, lines)}
    connections = set()
    for trial in m01["trials"]:
        (number,) = trial["exchanges"]
        exchange = exchanges[number]
        assert exchange["arm"] == "model-driven" and exchange["case"] == "M-01"
        assert (exchange["condition"], exchange["trial"]) == (trial["condition"], trial["number"])
        request = exchange["request"]
        assert request["method"] == "POST" and request["target"] == "/v1/chat/completions"
        assert request["text"].startswith("POST /v1/chat/completions HTTP/1.1\r\n")
        assert f'"{trial["condition"]} #{trial["number"]}"' in request["text"]
        reply = exchange["reply"]
        assert reply["status"] == 200 and reply["text"].startswith("HTTP/1.1 200 OK\r\n")
        body = reply["body"]["text"] if trial["number"] == 3 else reply["text"].split("\r\n\r\n")[1]
        assert (
            f"to {trial['condition']} #{trial['number']}"
            in json.loads(body)["choices"][0]["message"]["content"]
        )
        connections.add(exchange["connection"])
    assert len(connections) == 1  # one connection kept alive, each request with its trial
    transcript = json.loads((folder / "transcripts" / "M-01.json").read_text())
    assert [t["exchanges"] for t in transcript["trials"]] == [t["exchanges"] for t in m01["trials"]]
    assert transcript["trials"][0]["records"][0] == {"name": "status", "value": 200}

    (proxied,) = [exchanges[n] for n in m02["exchanges"]]
    assert proxied["request"]["target"] == f"http://127.0.0.1:{decoy.getsockname()[1]}/"
    assert m02["observed"] == "HTTP/1.1 404 Not Found"  # the endpoint answered it itself

    manifest = json.loads((folder / "manifest.json").read_text())
    model = manifest["model"]
    assert model["arm"] == "model-driven" and model["endpoint"] == stand_in.endpoint
    assert model["trials"] == 3 and model["exchanges"] == len(lines) == 7
    (info,) = model["info"]
    assert info["path"] == "/v1/models" and info["status"] == 200
    assert json.loads(info["text"]) == MODELS
    assert "model-arm/exchanges.jsonl" in {f["path"] for f in manifest["files"]}
    assert manifest["identical_runs"] == 2

    # the server saw the info request once, then both runs' requests, and nothing else
    assert stand_in.seen[0] == ("GET", "/v1/models", b"")
    posts = [s for s in stand_in.seen if s[0] == "POST"]
    assert len(posts) == 12 and len(stand_in.seen) == 15
    log = (folder / "log.txt").read_text()
    assert "the model endpoint answers only inside one" in log

    # the report's "Data and provenance" names the endpoint and what the server said
    provenance = tracework.open("demo").capture("arm").provenance()._repr_html_()
    assert f"<code>{stand_in.endpoint}</code>" in provenance and "GET /v1/models" in provenance
    assert info["sha256"] in provenance and "7 exchanges kept" in provenance


@pytest.mark.slow
def test_without_model_nothing_is_bound_and_trials_are_refused(pinned, tw, stand_in):
    setup = capture_workspace(pinned, tw)
    setup.write(
        "none",
        f"""\
        import os, socket
        from tracework_harness import HarnessError, capture

        with capture.case("N-01", "Is there a way to the model?") as c:
            try:
                socket.create_connection(("127.0.0.1", {stand_in.port}), 3).close()
                reached = "reached"
            except OSError as exc:
                reached = type(exc).__name__
            try:
                capture.trials("M-01", "q?")
                said = "allowed"
            except HarnessError as exc:
                said = str(exc)
            c.record("reached", reached)
            c.record("trials", said)
            c.check("nothing", holds=reached != "reached" and not os.path.exists("/capture/model"),
                    observed=reached)
        """,
    )
    result = setup.capture("none")
    assert result.exit_code == 0, result.output
    folder = setup.folder("none")
    assert json.loads((folder / "results.json").read_text())["counts"]["PASS"] == 1
    records = json.loads((folder / "transcripts" / "N-01.json").read_text())["records"]
    assert "capture.trials needs a [model] table" in records[1]["value"]
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["model"] is None
    assert not (folder / "model-arm").exists()
    assert stand_in.seen == []


@pytest.mark.slow
def test_connections_at_once_are_bounded(pinned, tw, stand_in):
    setup = capture_workspace(pinned, tw)
    setup.write(
        "flood",
        f"""\
        import socket, time
        from tracework_harness import capture

        head = b"POST /v1/chat/completions HTTP/1.1\\r\\nContent-Length: 9\\r\\n\\r\\n"
        with capture.case("F-01", "Past the bound, refused?", arm="model-driven") as c:
            held = []
            for _ in range(2):
                sock = socket.create_connection(("127.0.0.1", {stand_in.port}), 5)
                sock.sendall(head)  # the body never comes: the connection stays open
                held.append(sock)
            time.sleep(0.5)
            third = socket.create_connection(("127.0.0.1", {stand_in.port}), 5)
            third.settimeout(5)
            closed = third.recv(100) == b""
            held[0].settimeout(0.5)
            try:
                held[0].recv(100)
                still = False
            except socket.timeout:
                still = True
            c.record("third closed", closed)
            c.record("first still open", still)
            c.observe("the third was closed" if closed and still else "not bounded")
        """,
        toml=_model(stand_in.endpoint, "connections = 2\n"),
    )
    result = setup.capture("flood")
    assert result.exit_code == 0, result.output
    folder = setup.folder("flood")
    arm = json.loads((folder / "model-arm.json").read_text())
    assert arm["cases"][0]["observed"] == "the third was closed"
    lines = [json.loads(x) for x in (folder / "model-arm/exchanges.jsonl").read_text().splitlines()]
    refused = [e for e in lines if e.get("error", "").startswith("refused")]
    assert len(refused) == 1 and refused[0]["request"]["text"] == ""
    assert refused[0]["error"] == "refused: 2 connections were open ([model] connections)"


@pytest.mark.slow
def test_bytes_past_output_mib_stop_the_run(pinned, tw, stand_in):
    setup = capture_workspace(pinned, tw)
    setup.write(
        "flood",
        f"""\
        import socket
        from tracework_harness import capture

        with capture.case("F-01", "Is a flood of bytes bounded?", arm="model-driven") as c:
            sock = socket.create_connection(("127.0.0.1", {stand_in.port}), 5)
            size = 3 << 20
            sock.sendall(b"POST /v1/x HTTP/1.1\\r\\nContent-Length: %d\\r\\n\\r\\n" % size)
            try:
                sock.sendall(b"x" * size)
                sock.recv(100)  # wait for the reply, inside the case
            except OSError:
                pass
            c.observe("sent")
        """,
        toml="[limits]\noutput_mib = 1\n" + _model(stand_in.endpoint),
    )
    result = setup.capture("flood")
    assert result.exit_code == 1, result.output
    message = one_error(result)
    assert "its exchanges with the model endpoint went over the limit of 1 MiB" in message
    assert sum(len(body) for _m, _t, body in stand_in.seen) < 2 << 20


@pytest.mark.slow
def test_an_endpoint_that_does_not_answer_its_info_refuses_the_capture(pinned, tw):
    closed = socket.create_server(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    setup = capture_workspace(pinned, tw)
    setup.write(
        "down",
        "from tracework_harness import capture\n",
        toml=_model(f"http://localhost:{port}", 'info = ["/v1/models"]\n'),
    )
    result = setup.capture("down")
    assert result.exit_code == 2
    message = one_error(result)
    assert f"the model endpoint http://localhost:{port} did not answer GET /v1/models" in message
    assert "start the model server there" in message


@pytest.mark.parametrize(
    ("endpoint", "words"),
    [
        ("https://127.0.0.1:11434", "is not a local endpoint"),
        ("http://10.0.0.5:11434", "is not a local endpoint"),
        ("http://example.com:11434", "is not a local endpoint"),
        ("http://127.0.0.1", "is not a local endpoint"),
        ("http://127.0.0.1:11434/v1", "is not a local endpoint"),
        ("http://user@127.0.0.1:11434", "is not a local endpoint"),
        ("http://::1:11434", "is not a local endpoint"),
        ("http://127.0.0.1:80", "the port must be 1024 to 65535"),
        ("http://127.0.0.1:70000", "the port must be 1024 to 65535"),
    ],
)
def test_an_endpoint_that_is_not_local_is_refused(pinned, tw, endpoint, words):
    setup = capture_workspace(pinned, tw)
    setup.write("bad", "from tracework_harness import capture\n", toml=_model(endpoint))
    result = setup.tw("capture", "bad")
    assert result.exit_code == 2
    message = one_error(result)
    assert "model.endpoint" in message and words in message


def test_the_model_table_is_checked(pinned, tw):
    setup = capture_workspace(pinned, tw)
    for extra, words in (
        ('info = ["v1/models"]\n', "must be a path of the endpoint"),
        ("trials = 0\n", "trials"),
        ("connections = 1000\n", "connections"),
        ("port = 1\n", "unknown key"),
    ):
        setup.write("bad", "", toml=_model("http://[::1]:8080", extra))
        result = setup.tw("capture", "bad")
        assert result.exit_code == 2, extra
        assert words in one_error(result), extra


def test_the_declared_address_is_where_the_host_connects():
    for endpoint, address, inside in (
        ("http://127.0.0.1:8080", ("127.0.0.1", 8080), (("127.0.0.1", 8080),)),
        ("http://[::1]:8080/", ("::1", 8080), (("::1", 8080),)),
        ("http://localhost:8080", ("127.0.0.1", 8080), (("127.0.0.1", 8080), ("::1", 8080))),
    ):
        model = ModelConfig(endpoint=endpoint)
        assert model.address == address and model.inside == inside


def _carried(number: int, sent: list, received: bytes, error: str | None = None) -> Carried:
    return Carried(number, sent, bytearray(received), error)


def test_a_kept_alive_connection_is_split_into_its_exchanges():
    first = b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}"
    second = b"GET /v1/models HTTP/1.1\r\n\r\n"
    reply_1 = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
    reply_2 = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
    )
    carried = _carried(
        4,
        [
            (("M-01", "a", 1), first[:10]),
            (("M-01", "a", 1), first[10:]),
            (("M-01", "b", 1), second),
        ],
        reply_1 + reply_2,
    )
    one, two = split(carried)
    assert (one.label, one.request, one.reply, one.status) == (
        ("M-01", "a", 1),
        first,
        reply_1,
        200,
    )
    assert (two.label, two.request, two.reply, two.body) == (
        ("M-01", "b", 1),
        second,
        reply_2,
        b"abcde",
    )
    assert one.complete and two.complete and one.http
    lines, by_label = records([carried])
    assert by_label == {("M-01", "a", 1): [1], ("M-01", "b", 1): [2]}
    entry = json.loads(lines[1])
    assert entry["reply"]["body"] == {"text": "abcde"} and entry["connection"] == 4
    assert entry["request"] == {"method": "GET", "target": "/v1/models", "text": second.decode()}


def test_bytes_that_are_not_http_are_kept_whole():
    sent = [(("M-01", None, None), b"\xff\x00 not http at all")]
    (only,) = split(_carried(1, sent, b"\x00\x01", error="cut: reset"))
    assert not only.http and not only.complete
    assert (only.request, only.reply, only.error) == (
        b"\xff\x00 not http at all",
        b"\x00\x01",
        "cut: reset",
    )
    entry = json.loads(records([_carried(1, sent, b"")])[0][0])
    assert "base64" in entry["request"] and entry["reply"] is None
    head = b"HEAD / HTTP/1.1\r\n\r\n"
    reply = b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n"
    (exchange,) = split(_carried(1, [(None, head)], reply))
    assert exchange.complete and exchange.reply == reply  # a reply to HEAD has no body
    cut = b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\nonly part"
    (partial,) = split(_carried(1, [(None, b"GET / HTTP/1.1\r\n\r\n")], cut))
    assert not partial.complete and partial.reply == cut and partial.status == 200


def test_the_relay_refuses_broken_framing_and_connects_only_to_the_endpoint(tmp_path, stand_in):
    model = ModelConfig(endpoint=stand_in.endpoint)
    with Relay(model, tmp_path / "model", 1 << 20) as relay:
        for frames in (b"X\x00\x00\x00\x00", b"L\x00\x00\x00\x02{}", b"D\x00\x10\x00\x01"):
            with socket.socket(socket.AF_UNIX) as inside:
                inside.connect(str(relay.socket_path))
                inside.sendall(frames)
                inside.settimeout(5)
                assert inside.recv(10) == b""  # closed by the relay
        with socket.socket(socket.AF_UNIX) as inside:
            inside.connect(str(relay.socket_path))
            request = b"GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            inside.sendall(b"D" + len(request).to_bytes(4, "big") + request)
            inside.settimeout(5)
            got = b""
            while part := inside.recv(1 << 16):
                got += part
    assert got.startswith(b"HTTP/1.1 200 OK") and json.loads(got.split(b"\r\n\r\n")[1]) == MODELS
    errors = [c.error for c in relay.carried]
    assert errors == [
        "the sandbox's side broke the relay's framing",
        "the sandbox's side sent a label that is not one",
        "the sandbox's side broke the relay's framing",
        None,
    ]
    assert stand_in.seen == [("GET", "/v1/models", b"")]


def test_the_protocol_checks_each_trial():
    def lines(*messages: dict) -> list[bytes]:
        return [json.dumps(m).encode() for m in messages]

    hello = {"t": "hello", "protocol": 1}
    case = {"t": "case", "id": "M-01", "question": "q?", "arm": "model-driven"}
    end, done = {"t": "end", "case": "M-01"}, {"t": "done"}

    def trial(condition, number):
        return {"t": "trial", "case": "M-01", "condition": condition, "number": number}

    def seen(text="x"):
        return {"t": "observe", "case": "M-01", "observed": text, "criterion": None}

    good = [trial("a", 1), seen(), trial("b", 1), seen(), trial("a", 2), seen(), trial("b", 2)]
    raw = parse(lines(hello, case, *good, seen(), end, done), trials=2)
    assert [(t.opened.condition, t.opened.number) for t in raw.cases[0].trials] == [
        ("a", 1),
        ("b", 1),
        ("a", 2),
        ("b", 2),
    ]
    scripted = {**case, "arm": "scripted"}
    faults = {
        "no \\[model\\] table": (lines(hello, case, trial("a", 1)), None),
        "a trial in scripted case": (lines(hello, scripted, trial("a", 1)), 2),
        "before the last one observed": (lines(hello, case, trial("a", 1), trial("b", 1)), 2),
        "out of order": (lines(hello, case, trial("a", 2)), 2),
        "beyond": (lines(hello, case, trial("a", 1), seen(), trial("a", 2)), 1),
        "ran 1 trials of condition 'a', not 2": (
            lines(hello, case, trial("a", 1), seen(), end),
            2,
        ),
        "before its last trial observed": (lines(hello, case, trial("a", 1), end), 1),
    }
    for words, (sequence, count) in faults.items():
        with pytest.raises(ProtocolProblem, match=words if words != "beyond" else "out of order"):
            parse(sequence, trials=count)
