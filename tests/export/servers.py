"""Real servers on loopback for the export tests.

- Debian's ``prometheus-pushgateway`` and ``prometheus`` binaries (unpacked into
  ``.test-servers/`` by ``make test``, see tests/server_binaries.py), each on a free
  127.0.0.1 port with its data in a temporary folder (the Pushgateway with its own
  ``--persistence.file``), Prometheus scraping the Pushgateway every second with
  ``honor_labels`` (the pushed job/instance labels stay).
- :class:`OtlpReceiver`: an HTTP server on 127.0.0.1 that decodes every OTLP/HTTP request
  with the official ``opentelemetry-proto`` message class (``ExportMetricsServiceRequest``)
  — a stand-in for an OpenTelemetry Collector speaking the real protocol. It can also answer
  500, or hang, for the fault tests.
"""

from __future__ import annotations

import gzip
import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
import zlib

# tests/ on the path also where this file runs as a script (the hostile endpoint's process)
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from server_binaries import need_binary  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_http(url: str, proc: subprocess.Popen, log: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{url} exited at start: {open(log).read()[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not come up in {timeout} s: {open(log).read()[-2000:]}")


class Server:
    """A started server process; stop() ends it (also when the test failed)."""

    def __init__(self, args, url, ready_path, folder, name):
        self.url = url
        self.log = os.path.join(folder, f"{name}.log")
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait_http(url + ready_path, self.proc, self.log)
        except Exception:
            self.stop()
            raise

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def start_pushgateway(folder: str) -> Server:
    binary = need_binary("prometheus-pushgateway")
    port = free_port()
    args = [
        binary,
        f"--web.listen-address=127.0.0.1:{port}",
        f"--persistence.file={os.path.join(folder, 'pushgateway.store')}",
    ]
    return Server(args, f"http://127.0.0.1:{port}", "/-/ready", folder, "pushgateway")


def start_prometheus(folder: str, pushgateway_url: str, rule_files=()) -> Server:
    """Prometheus scraping the Pushgateway every second; rule_files: rule files it loads
    (evaluated every second)."""
    binary = need_binary("prometheus")
    port = free_port()
    target = urllib.parse.urlparse(pushgateway_url).netloc
    config = os.path.join(folder, "prometheus.yml")
    rules = "".join(f"  - {json.dumps(os.path.abspath(r))}\n" for r in rule_files)
    with open(config, "w") as f:
        f.write(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            + (f"rule_files:\n{rules}" if rules else "")
            + "scrape_configs:\n  - job_name: pushgateway\n    honor_labels: true\n"
            f"    static_configs:\n      - targets: ['{target}']\n"
        )
    data = os.path.join(folder, "prometheus-data")
    args = [
        binary,
        f"--config.file={config}",
        f"--storage.tsdb.path={data}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--web.enable-lifecycle",
    ]
    return Server(args, f"http://127.0.0.1:{port}", "/-/ready", folder, "prometheus")


def prom_query(prometheus: Server, promql: str):
    """The result vector of an instant query ([{"metric": {...}, "value": [t, "v"]}, ...])."""
    url = prometheus.url + "/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(url, timeout=10) as answer:
        body = json.load(answer)
    assert body["status"] == "success", body
    return body["data"]["result"]


def prom_wait(prometheus: Server, promql: str, count: int = 1, timeout: float = 60.0):
    """Query until the result has at least count series (Prometheus scrapes every second)."""
    deadline = time.monotonic() + timeout
    result = []
    while time.monotonic() < deadline:
        result = prom_query(prometheus, promql)
        if len(result) >= count:
            return result
        time.sleep(0.5)
    raise AssertionError(f"{promql}: {len(result)} series after {timeout} s, wanted {count}")


class OtlpReceiver:
    """OTLP/HTTP metrics receiver on 127.0.0.1 (see the module docstring).

    mode: 'ok' (decode, keep, answer 200), 'fail' (answer 500) or 'hang' (never answer
    until closed); the fault modes answer a Pushgateway's PUT the same way. requests: the
    decoded ExportMetricsServiceRequest messages; headers: the HTTP headers of each request."""

    def __init__(self, mode: str = "ok", tls=None):
        """tls: (certificate file, key file) to answer over https."""
        from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
            ExportMetricsServiceRequest,
            ExportMetricsServiceResponse,
        )

        self.mode = mode
        self.requests = []
        self.headers = []
        self.hits = 0
        self._release = threading.Event()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                receiver.hits += 1
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if receiver.mode == "hang":
                    receiver._release.wait(60)
                    return
                if receiver.mode == "fail":
                    self.send_response(500)
                    self.end_headers()
                    return
                encoding = (self.headers.get("Content-Encoding") or "").lower()
                if encoding == "gzip":
                    body = gzip.decompress(body)
                elif encoding == "deflate":
                    body = zlib.decompress(body)
                message = ExportMetricsServiceRequest()
                message.ParseFromString(body)
                receiver.requests.append(message)
                receiver.headers.append(dict(self.headers))
                reply = ExportMetricsServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def do_PUT(self):  # the Pushgateway's method, for the fault modes
                self.do_POST()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        scheme = "http"
        if tls is not None:
            import ssl

            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
            scheme = "https"
        self.url = f"{scheme}://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._release.set()
        self.server.shutdown()
        self.server.server_close()


def data_points(requests):
    """Every data point received: dicts with name, unit, kind, attributes, value, resource."""
    points = []
    for request in requests:
        for rm in request.resource_metrics:
            resource = {kv.key: _any_value(kv.value) for kv in rm.resource.attributes}
            for sm in rm.scope_metrics:
                for metric in sm.metrics:
                    kind = metric.WhichOneof("data")
                    for dp in getattr(metric, kind).data_points:
                        points.append(
                            {
                                "name": metric.name,
                                "unit": metric.unit,
                                "kind": kind,
                                "monotonic": getattr(getattr(metric, kind), "is_monotonic", None),
                                "attributes": {
                                    kv.key: _any_value(kv.value) for kv in dp.attributes
                                },
                                "value": dp.as_double
                                if dp.WhichOneof("value") == "as_double"
                                else dp.as_int,
                                "resource": resource,
                            }
                        )
    return points


def _any_value(value):
    return getattr(value, value.WhichOneof("value"))


class HostileServer:
    """A loopback HTTP endpoint that answers every request badly, in a process of its own (its
    memory, threads and sockets are not the test's). mode:

    - ``endless``: 200 with a chunked body that never ends;
    - ``huge``: 200 with a 2 GiB body (Content-Length), streamed;
    - ``drip``: the status line and a header a byte per ``drip`` seconds, never finished;
    - ``redirect-loop``: 307 to itself; ``redirect-away``: 302 to ``location``;
    - ``redirect-then-drip``: ``redirect-away`` to the first two requests, then ``drip``.

    ``requests``: how many requests it has answered or begun to answer (read from its
    output), for tests that wait until the target has been tried."""

    def __init__(self, mode: str, location: str = "", drip: float = 1.0):
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "hostile", mode, location, str(drip)],
            stdout=subprocess.PIPE,
            text=True,
        )
        self.url = f"http://127.0.0.1:{int(self.proc.stdout.readline())}"
        self.requests = 0
        self._counter = threading.Thread(target=self._count, daemon=True)
        self._counter.start()

    def _count(self) -> None:
        for _ in self.proc.stdout:
            self.requests += 1

    def wait_requests(self, n: int, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while self.requests < n:
            assert time.monotonic() < deadline, f"{self.requests} requests in {timeout} s"
            time.sleep(0.02)

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(10)


def _read_request(conn: socket.socket) -> bytes:
    """The request line and headers (and the body, by Content-Length) of one request."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return head


def _hostile_answer(conn: socket.socket, mode: str, location: str, drip: float, own: str):
    import itertools

    try:
        head = _read_request(conn)
        path = head.split(b" ")[1].decode() if head.count(b" ") >= 2 else "/"
        print("request", flush=True)
        if mode == "drip":
            for byte in itertools.chain(b"HTTP/1.1 200 OK\r\nX-Drip: ", itertools.repeat(97)):
                conn.sendall(bytes([byte]))
                time.sleep(drip)
        elif mode in ("endless", "huge"):
            framing = (
                "Transfer-Encoding: chunked" if mode == "endless" else "Content-Length: 2147483648"
            )
            conn.sendall(f"HTTP/1.1 200 OK\r\n{framing}\r\n\r\n".encode())
            block = bytes(65536)
            chunk = b"10000\r\n" + block + b"\r\n" if mode == "endless" else block
            for _ in range(1 << 15 if mode == "huge" else 1 << 62):
                conn.sendall(chunk)
        else:
            status = "307 Temporary Redirect" if mode == "redirect-loop" else "302 Found"
            where = own + path if mode == "redirect-loop" else location
            conn.sendall(
                f"HTTP/1.1 {status}\r\nLocation: {where}\r\nContent-Length: 0\r\n\r\n".encode()
            )
    except OSError:
        pass
    finally:
        conn.close()


def _serve_hostile(mode: str, location: str, drip: float) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    port = listener.getsockname()[1]
    print(port, flush=True)
    own = f"http://127.0.0.1:{port}"
    accepted = 0
    while True:
        conn, _ = listener.accept()
        accepted += 1
        now = mode
        if mode == "redirect-then-drip":
            now = "redirect-away" if accepted <= 2 else "drip"
        args = (conn, now, location, drip, own)
        threading.Thread(target=_hostile_answer, args=args, daemon=True).start()


if __name__ == "__main__":
    import sys

    if sys.argv[1] == "hostile":
        _serve_hostile(sys.argv[2], sys.argv[3], float(sys.argv[4]))
