"""Python clients of flakeid-server, as a Python service would use it:
requests for HTTP/JSON, grpcio with code generated at test time from the
shipped .proto.

The test starts the server itself (the binary in FLAKEID_SERVER_BIN, else
target/debug/flakeid-server) on ports the system picks, and waits for its
readiness line. Eight concurrent clients each take 10,000 IDs through each
API (HTTP one, HTTP batch, gRPC one, gRPC batch, gRPC stream); every ID must
be unique, each client's IDs increasing, and each ID must decode as its
layout says. Bad requests must get 400 / INVALID_ARGUMENT saying what is
wrong, and a generator whose lease store (a redis-server the test starts) is
killed must answer 503 / UNAVAILABLE within 1 s.

    python -m pytest server/tests/python
"""

import json
import os
import pathlib
import re
import selectors
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest
import requests
from google.protobuf import json_format, message_factory
from google.protobuf.descriptor_pool import DescriptorPool
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)
from grpc_tools import protoc

ROOT = pathlib.Path(__file__).resolve().parents[3]
PROTO_DIR = ROOT / "server" / "proto"
README = ROOT / "server" / "README.md"
BIN = pathlib.Path(os.environ.get("FLAKEID_SERVER_BIN", ROOT / "target" / "debug" / "flakeid-server"))

CLIENTS = 8
PER_API = 10_000
BATCH = 1_000

# Twitter's layout, high to low: 1 unused, 41 ms, 5 datacenter, 5 worker,
# 12 sequence; epoch 2010-11-04T01:42:54.657Z.
TWITTER_EPOCH_MS = 1_288_834_974_657
DATACENTER, WORKER = 3, 17


def decode_twitter(id_):
    return {
        "unix_ms": (id_ >> 22) + TWITTER_EPOCH_MS,
        "datacenter": (id_ >> 17) & 0x1F,
        "worker": (id_ >> 12) & 0x1F,
        "sequence": id_ & 0xFFF,
    }


@pytest.fixture(scope="session")
def pb():
    """The generated modules, made from the shipped .proto."""
    out = pathlib.Path(tempfile.mkdtemp(prefix="flakeid-pb-"))
    code = protoc.main(
        [
            "grpc_tools.protoc",
            f"-I{PROTO_DIR}",
            f"--python_out={out}",
            f"--grpc_python_out={out}",
            str(PROTO_DIR / "flakeid" / "v1" / "flakeid.proto"),
        ]
    )
    assert code == 0, "protoc failed"
    sys.path.insert(0, str(out))
    from flakeid.v1 import flakeid_pb2, flakeid_pb2_grpc

    yield flakeid_pb2, flakeid_pb2_grpc
    shutil.rmtree(out, ignore_errors=True)


class Server:
    """flakeid-server started with `args`, ready when it says so."""

    def __init__(self, args, config=None):
        assert BIN.exists(), f"{BIN} is missing: cargo build -p flakeid-server"
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="flakeid-server-"))
        argv = [str(BIN), "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"]
        if config is not None:
            path = self.dir / "server.toml"
            path.write_text(config)
            argv += ["--config", str(path)]
        self.stderr_path = self.dir / "stderr.log"
        self.process = subprocess.Popen(
            argv + list(args),
            stdout=subprocess.PIPE,
            stderr=open(self.stderr_path, "wb"),
            stdin=subprocess.DEVNULL,
            env={"PATH": os.environ.get("PATH", ""), "FLAKEID_LOG_LEVEL": "warn"},
        )
        line = self._readiness_line(timeout=30)
        fields = dict(word.split("=", 1) for word in line.split() if "=" in word)
        self.http = "http://" + fields["http"]
        self.grpc = fields["grpc"]

    def _readiness_line(self, timeout):
        selector = selectors.DefaultSelector()
        selector.register(self.process.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout
        buffered = b""
        while time.monotonic() < deadline:
            if selector.select(timeout=0.1):
                chunk = os.read(self.process.stdout.fileno(), 4096)
                if not chunk:
                    break
                buffered += chunk
                for line in buffered.decode().splitlines():
                    if line.startswith("flakeid-server ready"):
                        return line
        log = self.stderr()
        exited = self.process.poll()
        self.stop()
        what = f"exited with {exited}" if exited is not None else f"not ready within {timeout} s"
        raise AssertionError(f"flakeid-server {what}: {log}")

    def stderr(self):
        return self.stderr_path.read_text(errors="replace")

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


# Sonyflake's machine id fills the lowest 16 bits, where Twitter's node id
# starts at bit 12: the server refuses a machine id whose bits 12-15 are
# the low four bits of Twitter's node id (113: 0b0001), since Sonyflake
# would then issue, decades on, IDs that Twitter's node issues today.
SONYFLAKE_MACHINE = 146

CONFIG = f"""
max_count = {BATCH}
default_generator = "orders"

[generators.orders]
layout = "twitter"
node_fields = {{ datacenter = {DATACENTER}, worker = {WORKER} }}

[generators.events]
layout = "sonyflake"
node_id = {SONYFLAKE_MACHINE}
"""


@pytest.fixture(scope="module")
def server():
    s = Server([], CONFIG)
    yield s
    s.stop()


def http_one(session, server, _pb, _stub):
    ids = []
    for _ in range(PER_API):
        r = session.get(f"{server.http}/v1/id", timeout=5)
        assert r.status_code == 200, r.text
        ids.append(int(r.json()["id"]))
    return ids


def http_batch(session, server, _pb, _stub):
    ids = []
    while len(ids) < PER_API:
        r = session.get(f"{server.http}/v1/ids", params={"count": BATCH}, timeout=5)
        assert r.status_code == 200, r.text
        batch = r.json()["ids"]
        assert all(isinstance(i, str) for i in batch), "IDs are strings in JSON"
        ids += [int(i) for i in batch]
    return ids


def grpc_one(_session, _server, pb, stub):
    return [stub.NextId(pb.NextIdRequest(), timeout=5).id for _ in range(PER_API)]


def grpc_batch(_session, _server, pb, stub):
    ids = []
    while len(ids) < PER_API:
        ids += list(stub.NextIds(pb.NextIdsRequest(count=BATCH), timeout=5).ids)
    return ids


def grpc_stream(_session, _server, pb, stub):
    ids = []
    for chunk in stub.StreamIds(pb.StreamIdsRequest(count=PER_API), timeout=30):
        ids += list(chunk.ids)
    return ids


APIS = [http_one, http_batch, grpc_one, grpc_batch, grpc_stream]


def client(server, pb_modules):
    """One client: each API in turn, 10,000 IDs each, on its own
    connections."""
    pb, pb_grpc = pb_modules
    with requests.Session() as session, grpc.insecure_channel(server.grpc) as channel:
        stub = pb_grpc.IdGeneratorStub(channel)
        return [(api.__name__, api(session, server, pb, stub)) for api in APIS]


def test_eight_clients_get_unique_increasing_ids_that_decode(server, pb):
    started_ms = int(time.time() * 1000)
    with ThreadPoolExecutor(CLIENTS) as pool:
        results = list(pool.map(lambda _: client(server, pb), range(CLIENTS)))
    ended_ms = int(time.time() * 1000)

    everything = []
    for taken in results:
        mine = []
        for api, ids in taken:
            assert len(ids) == PER_API, (api, len(ids))
            assert all(a < b for a, b in zip(ids, ids[1:])), f"{api}: not increasing"
            mine += ids
        # One client's calls follow each other, so all its IDs increase.
        assert all(a < b for a, b in zip(mine, mine[1:])), "a client's IDs go back"
        everything += mine
    assert len(everything) == CLIENTS * len(APIS) * PER_API
    assert len(set(everything)) == len(everything), "an ID was handed out twice"

    for id_ in everything:
        d = decode_twitter(id_)
        assert (d["datacenter"], d["worker"]) == (DATACENTER, WORKER)
        # The generator's clock is a cached millisecond, anchored to the wall
        # clock at start: a few milliseconds of slack either side.
        assert started_ms - 5 <= d["unix_ms"] <= ended_ms + 5, (id_, d, started_ms, ended_ms)

    # The server's decode agrees with the layout, over both APIs.
    pb_mod, pb_grpc = pb
    with grpc.insecure_channel(server.grpc) as channel:
        stub = pb_grpc.IdGeneratorStub(channel)
        for id_ in everything[:: len(everything) // 50]:
            d = decode_twitter(id_)
            j = requests.get(f"{server.http}/v1/decode/{id_}", timeout=5).json()
            assert j["id"] == str(id_)
            assert j["unix_ms"] == d["unix_ms"] and j["sequence"] == d["sequence"]
            assert j["node_fields"] == {"datacenter": DATACENTER, "worker": WORKER}
            g = stub.Decode(pb_mod.DecodeRequest(id=f"{id_:016x}"), timeout=5)
            assert (g.id, g.unix_ms, g.sequence, g.form) == (id_, d["unix_ms"], d["sequence"], "hex")
            assert dict(g.node_fields) == {"datacenter": DATACENTER, "worker": WORKER}


def test_a_named_generator_uses_its_own_layout(server, pb):
    id_ = int(requests.get(f"{server.http}/v1/id", params={"generator": "events"}, timeout=5).json()["id"])
    # Sonyflake: 39 bits of 10 ms, 8 sequence, 16 machine (lowest).
    assert id_ & 0xFFFF == SONYFLAKE_MACHINE
    j = requests.get(f"{server.http}/v1/decode/{id_}", params={"generator": "events"}, timeout=5).json()
    assert j["node_fields"] == {"machine": SONYFLAKE_MACHINE}


def test_bad_requests_get_400_and_invalid_argument(server, pb):
    pb_mod, pb_grpc = pb
    for params, wanted in [
        ({"count": BATCH + 1}, f"count {BATCH + 1} is out of range: 1 to {BATCH}"),
        ({"count": 0}, "count 0 is out of range"),
        ({"count": 5, "generator": "nope"}, 'unknown generator "nope"'),
    ]:
        r = requests.get(f"{server.http}/v1/ids", params=params, timeout=5)
        assert r.status_code == 400, r.text
        assert wanted in r.json()["error"], r.text
    r = requests.get(f"{server.http}/v1/decode/not-an-id", timeout=5)
    assert r.status_code == 400 and 'cannot read ID "not-an-id"' in r.json()["error"], r.text

    with grpc.insecure_channel(server.grpc) as channel:
        stub = pb_grpc.IdGeneratorStub(channel)
        calls = [
            (lambda: stub.NextIds(pb_mod.NextIdsRequest(count=BATCH + 1), timeout=5), "is out of range"),
            (lambda: stub.NextId(pb_mod.NextIdRequest(generator="nope"), timeout=5), 'unknown generator "nope"'),
            (lambda: list(stub.StreamIds(pb_mod.StreamIdsRequest(count=10, chunk_size=70_000), timeout=5)), "chunk_size 70000"),
            (lambda: stub.Decode(pb_mod.DecodeRequest(id="ZZZ"), timeout=5), 'cannot read ID "ZZZ"'),
        ]
        for call, wanted in calls:
            with pytest.raises(grpc.RpcError) as raised:
                call()
            assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert wanted in raised.value.details(), raised.value.details()


def test_what_the_readme_says_of_errors_queries_and_metrics(server, pb):
    """Every error a JSON reason (404, 405 with Allow), long input quoted
    in part over both APIs, query values percent-decoded, every series in
    /metrics from the start."""
    pb_mod, pb_grpc = pb
    r = requests.post(f"{server.http}/v1/id", timeout=5)
    assert r.status_code == 405 and r.headers["Allow"] == "GET,HEAD", r.text
    assert "POST" in r.json()["error"]
    r = requests.get(f"{server.http}/v2/nothing", timeout=5)
    assert r.status_code == 404 and "/v1/ids?count=N" in r.json()["error"], r.text
    r = requests.get(f"{server.http}/v1/ids?count=%31%30&generator=%6Frders", timeout=5)
    assert r.status_code == 200 and len(r.json()["ids"]) == 10, r.text
    r = requests.get(f"{server.http}/v1/decode/{'x' * 10_000}", timeout=5)
    assert r.status_code == 400 and len(r.json()["error"]) < 300, r.text
    with grpc.insecure_channel(server.grpc) as channel:
        stub = pb_grpc.IdGeneratorStub(channel)
        for call in [
            lambda: stub.Decode(pb_mod.DecodeRequest(id="x" * 10_000), timeout=5),
            lambda: stub.NextId(pb_mod.NextIdRequest(generator="g" * 100_000), timeout=5),
        ]:
            with pytest.raises(grpc.RpcError) as raised:
                call()
            assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT, raised.value
            assert len(raised.value.details()) < 300, raised.value.details()
    fresh = Server([], CONFIG)
    try:
        metrics = requests.get(f"{fresh.http}/metrics", timeout=5).text.splitlines()
    finally:
        fresh.stop()
    for line in [
        "flakeid_server_streams_active 0",
        'flakeid_server_ids_issued_total{generator="orders"} 0',
    ]:
        assert line in metrics, (line, metrics)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_fenced_generator_answers_503_and_unavailable_within_a_second(pb):
    pb_mod, pb_grpc = pb
    redis_dir = tempfile.mkdtemp(prefix="flakeid-redis-")
    port = free_port()
    redis = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", redis_dir,
         "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    server = None
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "redis-server did not start"
                time.sleep(0.02)
        server = Server(["--lease-url", f"redis://127.0.0.1:{port}/", "--lease-ttl", "1s"])
        assert requests.get(f"{server.http}/v1/id", timeout=5).status_code == 200

        redis.kill()
        redis.wait()
        killed = time.monotonic()
        while True:
            begun = time.monotonic()
            r = requests.get(f"{server.http}/v1/id", timeout=1)
            assert time.monotonic() - begun < 1
            if r.status_code == 503:
                break
            assert r.status_code == 200, r.text
            assert time.monotonic() - killed < 2, "still issuing 2 s after the store died"
        assert r.headers["Retry-After"] == "1"
        assert "lease" in r.json()["error"]

        with grpc.insecure_channel(server.grpc) as channel:
            stub = pb_grpc.IdGeneratorStub(channel)
            for call in [
                lambda: stub.NextId(pb_mod.NextIdRequest(), timeout=1),
                lambda: stub.NextIds(pb_mod.NextIdsRequest(count=10), timeout=1),
                lambda: list(stub.StreamIds(pb_mod.StreamIdsRequest(count=10_000), timeout=1)),
            ]:
                with pytest.raises(grpc.RpcError) as raised:
                    call()
                assert raised.value.code() == grpc.StatusCode.UNAVAILABLE, raised.value
                trailers = dict(raised.value.trailing_metadata() or ())
                assert trailers.get("grpc-retry-pushback-ms") == "1000", trailers
        assert requests.get(f"{server.http}/ready", timeout=1).status_code == 503
    finally:
        if server is not None:
            server.stop()
        if redis.poll() is None:
            redis.kill()
            redis.wait()
        shutil.rmtree(redis_dir, ignore_errors=True)


def readme_block(marker):
    """The sh block after `marker` in the README: (command, output lines)."""
    text = README.read_text()
    block = text[text.index(marker):].split("```sh\n", 1)[1].split("\n```", 1)[0]
    steps = []
    for line in block.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line)
    return steps


def digits_match(expected, actual):
    """Whether `actual` is `expected` with each run of digits any digits."""
    pattern = "".join(r"\d+" if part.isdigit() else re.escape(part) for part in re.split(r"(\d+)", expected))
    return re.fullmatch(pattern, actual) is not None


def grpcurl(channel, pool, args):
    """What `grpcurl -plaintext [-d JSON] ADDR (list | SERVICE/METHOD)`
    prints, through server reflection as grpcurl finds the methods."""
    data = args[args.index("-d") + 1] if "-d" in args else "{}"
    target = args[-1]
    if target == "list":
        return sorted(ProtoReflectionDescriptorDatabase(channel).get_services())
    service, method = target.split("/")
    descriptor = pool.FindServiceByName(service).FindMethodByName(method)
    request_class = message_factory.GetMessageClass(descriptor.input_type)
    response_class = message_factory.GetMessageClass(descriptor.output_type)
    kind = channel.unary_stream if descriptor.server_streaming else channel.unary_unary
    call = kind(
        f"/{target}",
        request_serializer=request_class.SerializeToString,
        response_deserializer=response_class.FromString,
    )
    request = json_format.Parse(data, request_class())
    try:
        replies = list(call(request, timeout=5)) if descriptor.server_streaming else [call(request, timeout=5)]
    except grpc.RpcError as e:
        code = "".join(word.capitalize() for word in e.code().name.split("_"))
        return ["ERROR:", f"  Code: {code}", f"  Message: {e.details()}"]
    return [line for reply in replies for line in grpcurl_json(reply)]


def grpcurl_json(message):
    """A message as grpcurl prints it: protojson, fields in their order,
    map entries sorted by key, two-space indents."""
    fields = json_format.MessageToDict(message)
    for field in message.DESCRIPTOR.fields:
        if field.message_type and field.message_type.GetOptions().map_entry and field.json_name in fields:
            fields[field.json_name] = dict(sorted(fields[field.json_name].items()))
    return json.dumps(fields, indent=2).splitlines()


def test_the_readme_grpcurl_walkthrough_prints_what_it_says():
    """The README's grpcurl commands, run through a reflection client on a
    server started as its curl walk-through starts one (grpcurl is no
    Debian package; the client asks reflection what grpcurl asks)."""
    start, _ = readme_block("<!-- the walk-through below is run by tests/readme.rs -->")[0]
    args = shlex.split(start.removesuffix("&"))[1:]
    server = Server(args)
    try:
        readme_addr = "127.0.0.1:50051"
        with grpc.insecure_channel(server.grpc) as channel:
            pool = DescriptorPool(ProtoReflectionDescriptorDatabase(channel))
            steps = readme_block("<!-- the grpcurl walk-through below")
            assert steps, "the README has a grpcurl walk-through"
            for command, expected in steps:
                args = shlex.split(command)
                assert args[:2] == ["grpcurl", "-plaintext"] and readme_addr in args, command
                printed = grpcurl(channel, pool, args)
                assert len(printed) == len(expected), (command, printed, expected)
                for e, a in zip(expected, printed):
                    assert digits_match(e, a), (command, e, a)
    finally:
        server.stop()
