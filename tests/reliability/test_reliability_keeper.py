"""The Keeper API client of the C core (_core.keeper_servers / keeper_prices / keeper_path,
csrc/keeper.c and csrc/py_catalog.c) against a real HTTP server on 127.0.0.1 (an ephemeral
port) that answers what each test scripts: no leak over many calls (answers, HTTP errors,
refused connections), and any answer body (damaged JSON, deep nesting, invalid UTF-8, huge
numbers, a hang) gives a value or RuntimeError/ValueError within the timeout, never a crash."""

from __future__ import annotations

import random
import time
from http.server import BaseHTTPRequestHandler

import pytest
from loopback import LoopbackHTTPServer
from reliability_helpers import assert_no_leak
from test_reliability_leaks import covers

from resource_tracker import _core

SERVERS = (
    b'[{"vendor_id":"aws","server_id":"m5.large","vcpus":2,"memory_amount":8192,'
    b'"gpu_count":0,"min_price":0.096,"score_per_price":100.5,"architecture":"x86_64",'
    b'"nested":{"a":[1,2.5,null,true,"x"]}}]'
)
PRICES = b'[{"region_id":"us-east-1","zone_id":"use1-az1","price":0.096,"currency":"USD"}]'


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):  # noqa: N802 - http.server's name
        status, body, delay = self.server.answer
        if delay:
            time.sleep(delay)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except OSError:
            pass


class KeeperStandIn(LoopbackHTTPServer):
    """A Keeper API stand-in on 127.0.0.1 answering (status, body, delay) = self.answer."""

    def __init__(self):
        super().__init__(_Handler)
        self.answer = (200, SERVERS, 0.0)


@pytest.fixture
def keeper():
    with KeeperStandIn() as server:
        yield server


QUERY = dict(vcpus_min=2, memory_min_mib=4096.0, vendors=["aws", "gcp"], regions=["eu-west-1"])


@covers("keeper_servers", "keeper_prices", "keeper_path")
def test_reliability_leak_keeper(keeper):
    # each call returns once the stand-in's handler threads ended (settle): their sockets,
    # threads and objects are the server's, not a leak of the client
    def servers():
        url, answer = _core.keeper_servers(keeper.url, timeout=2.0, **QUERY)
        keeper.settle()
        assert answer[0]["server_id"] == "m5.large"

    def prices():
        url, answer = _core.keeper_prices(keeper.url, "aws", "m5.large", timeout=2.0)
        keeper.settle()
        assert answer[0]["price"] == 0.096

    def refused(kind):
        with pytest.raises(RuntimeError):
            if kind == "servers":
                _core.keeper_servers(keeper.url, timeout=2.0, **QUERY)
            else:
                _core.keeper_prices(keeper.url, "aws", "m5.large", timeout=2.0)
        keeper.settle()

    assert_no_leak("keeper_servers(answer)", servers, 100)
    keeper.answer = (200, PRICES, 0.0)
    assert_no_leak("keeper_prices(answer)", prices, 100)

    def path():
        url, answer = _core.keeper_path(keeper.url, "/server/aws/m5.large/prices", timeout=2.0)
        keeper.settle()
        assert answer[0]["price"] == 0.096

    assert_no_leak("keeper_path(answer)", path, 100)
    with pytest.raises(ValueError, match="percent-encoded"):
        _core.keeper_path(keeper.url, "/servers?q=a b")
    keeper.answer = (503, b"upstream down", 0.0)
    assert_no_leak("keeper_servers(HTTP 503)", lambda: refused("servers"), 100)
    keeper.answer = (200, b"{not json", 0.0)
    assert_no_leak("keeper_prices(not JSON)", lambda: refused("prices"), 100)

    def dead_end():
        with pytest.raises(RuntimeError):
            _core.keeper_prices("http://127.0.0.1:9", "aws", "m5.large", timeout=1.0)

    assert_no_leak("keeper_prices(refused)", dead_end, 200)


def _odd_body(rng):
    base = rng.choice([SERVERS, PRICES, b'{"servers":' + SERVERS + b"}"])
    kind = rng.randrange(7)
    if kind == 0:
        return b"[" * rng.randrange(50, 3000) + b"]" * rng.randrange(0, 3000)
    if kind == 1:
        return base.replace(b"m5.large", b"\xff\xfe\xc3(")  # invalid UTF-8 in a value
    if kind == 2:
        return base.replace(b'"vcpus"', b'"\xc3\x28"')  # invalid UTF-8 in a key
    if kind == 3:
        return base.replace(b"0.096", rng.choice([b"1e400", b"-1e400", b"1e-400", b"99" * 40]))
    if kind == 4:
        cut = rng.randrange(len(base))
        return base[:cut]
    if kind == 5:
        data = bytearray(base)
        for _ in range(rng.randrange(1, 10)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        return bytes(data)
    return b'{"a":' * 70 + b"1" + b"}" * 70  # deeper than the converter's limit


def test_reliability_fault_keeper_answers(keeper):
    """300 damaged answers and one that hangs: a value or RuntimeError/ValueError each time."""
    rng = random.Random(99)
    outcomes = {}
    for _ in range(300):
        keeper.answer = (200, _odd_body(rng), 0.0)
        try:
            _core.keeper_servers(keeper.url, timeout=2.0, **QUERY)
            outcome = "value"
        except (RuntimeError, ValueError) as exc:
            outcome = type(exc).__name__
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    keeper.answer = (200, PRICES, 5.0)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError):
        _core.keeper_prices(keeper.url, "aws", "m5.large", timeout=0.5)
    took = time.monotonic() - t0
    print(f"keeper: 300 damaged answers -> {outcomes}; a hanging answer gave up in {took:.2f} s")
    assert took < 5.0  # its own 0.5 s timeout, not the answer held for 5 s
