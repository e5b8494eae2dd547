"""A real `muisti serve` for the suite: started once per session on a free loopback port over
a fresh SQLite file, stopped at the end.

The binary: `MUISTI_BIN`, else the workspace's `target/{debug,release}/muisti` (or under
`CARGO_TARGET_DIR`), else `muisti` on PATH. Without one the server tests skip with a printed
line; with `MUISTI_REQUIRE_SERVICES=1` (CI) they fail instead.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pytest

ROOT = Path(__file__).resolve().parents[3]


def find_binary() -> Optional[str]:
    if os.environ.get("MUISTI_BIN"):
        return os.environ["MUISTI_BIN"]
    targets = [Path(os.environ["CARGO_TARGET_DIR"])] if os.environ.get("CARGO_TARGET_DIR") else []
    targets.append(ROOT / "target")
    for target in targets:
        for profile in ("release", "debug"):
            candidate = target / profile / "muisti"
            if candidate.is_file():
                return str(candidate)
    return shutil.which("muisti")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    url: str
    home: Path
    binary: str
    api_key: Optional[str] = None


def start(binary: str, home: Path, args: list[str], api_key: Optional[str] = None) -> tuple[Server, subprocess.Popen]:
    port = free_port()
    env = {**os.environ, "HOME": str(home), "XDG_DATA_HOME": str(home / "data"), "XDG_CONFIG_HOME": str(home / "config")}
    log = open(home / "serve.log", "wb")
    process = subprocess.Popen(
        [binary, "--store", f"sqlite://{home}/muisti.db", "serve", "--listen", f"127.0.0.1:{port}", *args],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"muisti serve exited: {(home / 'serve.log').read_text()}")
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=1):
                return Server(url, home, binary, api_key), process
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("muisti serve did not answer within 30 s")


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()


def need_binary() -> str:
    binary = find_binary()
    if binary is None:
        message = "no muisti binary (build it with `cargo build -p muisti-cli` or set MUISTI_BIN)"
        if os.environ.get("MUISTI_REQUIRE_SERVICES") == "1":
            pytest.fail(message)
        print(f"skipped: {message}")
        pytest.skip(message)
    return binary


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """An open-mode server (no keys: loopback only, unauthenticated)."""
    binary = need_binary()
    srv, process = start(binary, tmp_path_factory.mktemp("serve"), [])
    yield srv
    stop(process)


@pytest.fixture(scope="session")
def keyed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server with one admin key of tenant `acme` (made by `muisti keys create`)."""
    binary = need_binary()
    home = tmp_path_factory.mktemp("keyed")
    env = {**os.environ, "HOME": str(home), "XDG_DATA_HOME": str(home / "data"), "XDG_CONFIG_HOME": str(home / "config")}
    made = subprocess.run(
        [binary, "--store", f"sqlite://{home}/muisti.db", "keys", "create", "--tenant", "acme", "--admin"],
        env=env, capture_output=True, text=True, check=True,
    )
    key = next(w for w in (made.stdout + made.stderr).split() if w.startswith("muisti_"))
    srv, process = start(binary, home, [], api_key=key)
    yield srv
    stop(process)
