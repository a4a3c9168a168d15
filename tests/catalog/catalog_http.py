"""Loopback HTTP servers for the catalog tests (real sockets on 127.0.0.1, ephemeral ports).

- FileServer: serves byte blobs by path (the catalog dumps); a path in `cut` gets the full
  Content-Length header but only half of the body, then the connection is dropped.
- KeeperStandIn: a stand-in for the Spare Cores Keeper answering the documented API
  (GET /servers with vcpus_min, memory_min in GiB, gpu_min, gpu_memory_min / gpu_memory_total
  in GiB, vendor, regions, countries, architecture, compliance_framework, allocation,
  green_energy, order_by, order_dir, limit; GET /server/{vendor}/{server}/prices) from the test
  catalog, and recording every request (path, query, headers). The real Keeper cannot be
  reached from the tests (loopback only), so this stand-in speaks its interface.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit


class _Server:
    def __init__(self, handler):
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.owner = self
        self.requests = []
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


class _Quiet(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _record(self):
        parts = urlsplit(self.path)
        entry = {
            "path": parts.path,
            "query": parse_qs(parts.query, keep_blank_values=True),
            "raw_query": parts.query,
            "headers": dict(self.headers.items()),
        }
        self.server.owner.requests.append(entry)
        return entry

    def _send(self, status, body, ctype="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class FileServer(_Server):
    def __init__(self, files, cut=()):
        self.files = dict(files)
        self.cut = set(cut)
        super().__init__(_FileHandler)


class _FileHandler(_Quiet):
    def do_GET(self):
        entry = self._record()
        owner = self.server.owner
        body = owner.files.get(entry["path"])
        if body is None:
            self._send(404, b"not found", "text/plain")
            return
        if entry["path"] in owner.cut:
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)
            return
        self._send(200, body, "application/octet-stream")


class KeeperStandIn(_Server):
    def __init__(self, reference, fail=None):
        self.ref = reference
        self.fail = fail  # None, "500", "garbage" or "bad-utf8"
        super().__init__(_KeeperHandler)

    def servers(self, q):
        ref = self.ref

        def one(name, cast=str):
            return cast(q[name][0]) if name in q else None

        def many(name):
            return q.get(name)

        cpu = one("vcpus_min", int) or 1
        memory = (one("memory_min", float) or 0) * 1024
        gpu = one("gpu_min", int) or 0
        per_gpu = (one("gpu_memory_min", float) or 0) * 1024
        total = (one("gpu_memory_total", float) or 0) * 1024
        allocation = one("allocation") or "any"
        vendors = set(many("vendor")) if many("vendor") else None
        archs = set(many("architecture")) if many("architecture") else None
        compliance = set(many("compliance_framework")) if many("compliance_framework") else None
        countries = set(many("countries")) if many("countries") else None
        green = one("green_energy") == "true"
        price_max = one("price_max", float)
        rows = ref.rank(
            cpu=cpu, memory=memory, gpu=gpu, vram=total, vendors=vendors,
            regions=many("regions"), countries=countries, archs=archs, allocation=allocation,
            compliance=compliance, green=green, max_price=price_max,
            order_by="score_per_price" if one("order_by") == "score_per_price" else "price",
        )  # fmt: skip
        out = []
        for price, vendor, server_id, score in rows:
            s = dict(ref.servers[(vendor, server_id)])
            if (s["gpu_memory_min"] or 0) < per_gpu:
                continue
            for key in ("cpu_flags", "cpus", "gpus", "storages"):
                s[key] = json.loads(s[key]) if isinstance(s[key], str) else s[key]
            s["cpu_architecture"] = s["cpu_architecture"].lower()
            s["status"] = s["status"].lower()
            s.update(
                score=score,
                price=price,
                min_price=price,
                min_price_spot=None,
                min_price_ondemand=price,
                score_per_price=score / price if score else None,
                vendor={"vendor_id": vendor, "name": vendor.upper()},
            )
            out.append(s)
        return out[: one("limit", int) or 25]

    def prices(self, vendor, server):
        ref = self.ref
        sid = next(
            (
                k[1]
                for k, s in ref.servers.items()
                if k[0] == vendor and server in (s["server_id"], s["api_reference"])
            ),
            None,
        )
        return [p for p in ref.prices if p["vendor_id"] == vendor and p["server_id"] == sid]


class _KeeperHandler(_Quiet):
    def do_GET(self):
        entry = self._record()
        owner = self.server.owner
        if owner.fail == "500":
            self._send(500, b'{"detail": "internal error"}')
            return
        if owner.fail == "garbage":
            self._send(200, b"<html>not json</html>", "text/html")
            return
        if owner.fail == "bad-utf8":  # valid JSON syntax, a key that is not UTF-8
            self._send(200, b'[{"server_id": "x", "\xff\xfe": 1}]')
            return
        path = entry["path"]
        if path == "/servers":
            body = owner.servers(entry["query"])
        elif path.startswith("/server/") and path.endswith("/prices"):
            _, _, vendor, server, _ = path.split("/")
            body = owner.prices(unquote(vendor), unquote(server))
        else:
            self._send(404, b'{"detail": "Not Found"}')
            return
        self._send(200, json.dumps(body).encode())
