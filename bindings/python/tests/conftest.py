"""Fixtures: real Redis and etcd servers on loopback with free ports, each
in a temporary directory, started once per test session and stopped at its
end. They are the Debian packages' binaries (redis-server, etcd)."""

import os
import shutil
import socket
import subprocess
import tempfile
import time
from typing import Iterator

import pytest

import flakeid_rs

# FLAKEID_RS_TEST_NO_FORK_DETECTION=1 turns the extension's fork detection
# off for the whole run: the fork tests must then fail (see
# tests/test_fork.py). Never set otherwise.
if os.environ.get("FLAKEID_RS_TEST_NO_FORK_DETECTION") == "1":
    flakeid_rs._native._set_fork_detection_for_tests(False)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen, name: str) -> None:
    """Waits until the server accepts connections (the event itself), or
    fails if it exits; 60 s bounds a server that hangs at start."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"{name} did not listen on {port} within 60 s")


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail("redis-server is not installed (Debian: redis-server)")
    port = free_port()
    with tempfile.TemporaryDirectory() as data:
        process = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", data],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        try:
            wait_for_port(port, process, "redis-server")
            yield f"redis://127.0.0.1:{port}/"
        finally:
            stop(process)


@pytest.fixture(scope="session")
def etcd_endpoint() -> Iterator[str]:
    binary = shutil.which("etcd")
    if binary is None:
        pytest.fail("etcd is not installed (Debian: etcd-server)")
    client, peer = free_port(), free_port()
    with tempfile.TemporaryDirectory() as data:
        url = f"http://127.0.0.1:{client}"
        process = subprocess.Popen(
            [binary, "--name", "flakeid-rs-test", "--data-dir", data,
             "--listen-client-urls", url, "--advertise-client-urls", url,
             "--listen-peer-urls", f"http://127.0.0.1:{peer}",
             "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
             "--initial-cluster", f"flakeid-rs-test=http://127.0.0.1:{peer}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        try:
            wait_for_port(client, process, "etcd")
            yield url
        finally:
            stop(process)


_prefixes = iter(range(1, 1_000_000))


@pytest.fixture
def prefix() -> str:
    """A key prefix of its own for each test, so tests share no node ids."""
    return f"flakeid-rs-test/{os.getpid()}/{next(_prefixes)}"
