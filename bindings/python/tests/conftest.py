"""Fixtures: real Redis, etcd, PostgreSQL and MariaDB servers on loopback
with free ports, each in a temporary directory, started once per test
session and stopped at its end. They are the Debian packages' binaries
(redis-server, etcd-server, postgresql, mariadb-server)."""

import getpass
import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator, List, Optional

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


def run_as(user: str) -> List[str]:
    """The prefix that runs a program as `user` when the tests run as root
    (PostgreSQL refuses to run as root), else nothing."""
    return ["runuser", "-u", user, "--"] if os.geteuid() == 0 else []


def owned_scratch(user: str) -> str:
    """A temporary directory the server's user owns (root's mkdtemp is 0700)."""
    path = tempfile.mkdtemp(prefix=f"flakeid-rs-{user}-")
    if os.geteuid() == 0:
        shutil.chown(path, user)
    return path


def wait_until(ready: Callable[[], bool], process: subprocess.Popen, name: str,
               log: Path) -> None:
    """Waits until `ready()` (the event itself), or fails if the server
    exits; 60 s bounds a server that hangs at start."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited with {process.returncode}:\n{log.read_text()}")
        if ready():
            return
        time.sleep(0.05)
    raise RuntimeError(f"{name} not ready within 60 s:\n{log.read_text()}")


def stop_by_pid_file(pid_file: Path, sig: int, process: subprocess.Popen) -> None:
    """Signals the server by its pid file (`runuser` in between does not
    pass signals on), waits for it to end (30 s, then SIGKILL)."""
    try:
        pid: Optional[int] = int(pid_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        pid = None
    if pid is not None:
        os.kill(pid, sig)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
        process.kill()
        process.wait()


def postgres_bin() -> Path:
    """The newest PostgreSQL's programs (Debian keeps each major version
    under /usr/lib/postgresql/<version>/bin)."""
    found = [Path(p) for p in glob.glob("/usr/lib/postgresql/*/bin")
             if (Path(p) / "postgres").is_file()]
    if not found:
        pytest.fail("PostgreSQL is not installed (Debian: postgresql)")
    return max(found, key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A fresh cluster (initdb, trust authentication) run as the `postgres`
    user; the URL of its superuser `postgres` and database `postgres`."""
    bin_dir = postgres_bin()
    user = "postgres"
    scratch = owned_scratch(user)
    data, log = Path(scratch) / "data", Path(scratch) / "server.log"
    port = free_port()
    try:
        with open(log, "ab") as out:
            subprocess.run(
                run_as(user) + [str(bin_dir / "initdb"), "-D", str(data), "--username", user,
                                "--auth", "trust", "--encoding", "UTF8", "--no-locale",
                                "--no-sync"],
                stdout=out, stderr=out, check=True, cwd=scratch,
            )
            process = subprocess.Popen(
                run_as(user) + [str(bin_dir / "postgres"), "-D", str(data), "-p", str(port),
                                "-c", "listen_addresses=127.0.0.1",
                                "-c", f"unix_socket_directories={scratch}",
                                "-c", "fsync=off", "-c", "synchronous_commit=off"],
                stdout=out, stderr=out, stdin=subprocess.DEVNULL, cwd=scratch,
            )

        def accepts() -> bool:
            # pg_isready: 0 once the server accepts connections (a port
            # open while it starts up is not enough).
            return subprocess.run(
                [str(bin_dir / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(port)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            ).returncode == 0

        try:
            wait_until(accepts, process, "postgres", log)
            yield f"postgres://postgres@127.0.0.1:{port}/postgres"
        finally:
            # SIGINT: fast shutdown, sessions ended without waiting.
            stop_by_pid_file(data / "postmaster.pid", signal.SIGINT, process)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@pytest.fixture(scope="session")
def mysql_url() -> Iterator[str]:
    """A fresh MariaDB (mariadb-install-db) run as the `mysql` user; the URL
    of a user `flakeid` with every right on the database `flakeid`, made
    through the Unix socket as root."""
    path = os.environ.get("PATH", os.defpath) + ":/usr/sbin:/usr/bin"
    server, install, client = (shutil.which(p, path=path)
                               for p in ("mariadbd", "mariadb-install-db", "mariadb"))
    if server is None or install is None or client is None:
        pytest.fail("MariaDB is not installed (Debian: mariadb-server)")
    user = "mysql"
    scratch = owned_scratch(user)
    data, log = Path(scratch) / "data", Path(scratch) / "server.log"
    sock, pid_file = Path(scratch) / "mysqld.sock", Path(scratch) / "mysqld.pid"
    port = free_port()
    root = os.geteuid() == 0
    user_args = [f"--user={user}"] if root else []
    # mariadb-install-db makes root, and a non-root installer's own user,
    # accounts that log in through the socket as that system user.
    admin = "root" if root else getpass.getuser()
    try:
        with open(log, "ab") as out:
            # Its temporary tables in its own directory: a bootstrapping
            # server removes every temporary table in its tmpdir, another
            # install's in /tmp too.
            subprocess.run(
                [install, "--no-defaults", f"--datadir={data}", f"--tmpdir={scratch}",
                 "--skip-test-db", "--skip-name-resolve"] + user_args,
                stdout=out, stderr=out, check=True, cwd=scratch,
                env={**os.environ, "TMPDIR": scratch},
            )
            process = subprocess.Popen(
                [server, "--no-defaults", f"--datadir={data}", f"--socket={sock}",
                 f"--port={port}", "--bind-address=127.0.0.1", f"--pid-file={pid_file}",
                 f"--tmpdir={scratch}",
                 f"--log-error={log}", "--skip-log-bin", "--skip-name-resolve",
                 "--innodb-flush-log-at-trx-commit=0"] + user_args,
                stdout=out, stderr=out, stdin=subprocess.DEVNULL, cwd=scratch,
            )

        def set_up() -> bool:
            # By unix_socket authentication (this process's user), as soon
            # as the server takes connections.
            return subprocess.run(
                [client, "--no-defaults", f"--socket={sock}", "-u", admin, "-e",
                 "CREATE DATABASE IF NOT EXISTS flakeid; "
                 "CREATE USER IF NOT EXISTS 'flakeid'@'%' IDENTIFIED BY 'secret'; "
                 "GRANT ALL ON flakeid.* TO 'flakeid'@'%';"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            ).returncode == 0

        try:
            wait_until(set_up, process, "mariadbd", log)
            yield f"mysql://flakeid:secret@127.0.0.1:{port}/flakeid"
        finally:
            stop_by_pid_file(pid_file, signal.SIGTERM, process)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


_prefixes = iter(range(1, 1_000_000))


@pytest.fixture
def prefix() -> str:
    """A key prefix of its own for each test, so tests share no node ids."""
    return f"flakeid-rs-test/{os.getpid()}/{next(_prefixes)}"
