"""Time of recommend_server(): the local SQLite catalog next to the online (Keeper) path.

Usage: python3 bench/bench_catalog.py [--rounds 30] [--full-size] [--load]

The local catalog is built in a temp dir from tests/data (the full 2026-01 dump, 5,176
servers, real 2024-02 AWS prices plus marked test prices; tests/catalog/catalog_fixture.py).
The online path runs against a loopback HTTP server answering GET /servers with a canned
answer of 5 records (what the real Keeper returns for n=5), so the figure is the client's
own cost: libcurl request + cJSON parsing + conversion, not the Keeper's query time or the
internet. Goal (issue 4): <= 50 ms per local call on a full-size catalog.

--full-size adds SYNTHETIC price rows (every active server in up to 25 regions of its vendor,
two zones, on-demand and spot: about 500,000 rows, the order of magnitude of the published
sc-data-all dump) so that the query time is measured at a realistic table size.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "catalog"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "data"))
sys.path.insert(0, os.path.join(HERE, ".."))

RESOURCES = {"cpu": 2, "memory": 4096, "gpu": 0, "vram": 0}


def _times(func, rounds):
    out = []
    for _ in range(rounds):
        start = time.perf_counter()
        func()
        out.append((time.perf_counter() - start) * 1000.0)
    return out


def _add_synthetic_prices(db):
    """Adds made-up price rows (marked SYNTHETIC) up to a full-size table; the number added."""
    import sqlite3

    conn = sqlite3.connect(db)
    regions = {}
    for vendor, region in conn.execute("SELECT vendor_id, region_id FROM region"):
        regions.setdefault(vendor, []).append(region)
    rows = []
    servers = conn.execute(
        "SELECT vendor_id, server_id, vcpus, memory_amount FROM server WHERE status = 'ACTIVE'"
    ).fetchall()
    for vendor, sid, vcpus, memory in servers:
        price = 0.01 * vcpus + 0.002 * (memory or 0) / 1024
        for region in regions.get(vendor, [])[:25]:
            for zone in ("-synthetic-a", "-synthetic-b"):
                for alloc, factor in (("ONDEMAND", 1.0), ("SPOT", 0.3)):
                    key = (vendor, region, region + zone, sid, "Linux", alloc, "HOUR")
                    rows.append((*key, price * factor, 0.0, "[]", "USD", "ACTIVE", "SYNTHETIC"))
    before = conn.total_changes
    conn.executemany(f"INSERT OR IGNORE INTO server_price VALUES ({','.join('?' * 13)})", rows)
    conn.commit()
    added = conn.total_changes - before
    conn.close()
    return added


def _load_times(db, rounds):
    """Prints the time of update_catalog() of db served as .db.bz2 and as .sql.xz."""
    import bz2
    import lzma
    import resource
    import sqlite3

    from catalog_http import FileServer

    from resource_tracker import catalog

    with open(db, "rb") as f:
        blobs = {"/catalog.db.bz2": bz2.compress(f.read(), 9)}
    conn = sqlite3.connect(db)
    text = "\n".join(conn.iterdump()) + "\n"
    conn.close()
    blobs["/catalog.sql.xz"] = lzma.compress(text.encode(), preset=6)
    server = FileServer(blobs)
    try:
        for name, blob in blobs.items():
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            took, cpu = [], []
            for _ in range(max(1, min(rounds, 5))):
                start, start_cpu = time.perf_counter(), time.process_time()
                info = catalog.update_catalog(url=server.url + name)
                took.append(time.perf_counter() - start)
                cpu.append(time.process_time() - start_cpu)
            grew = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak) / 1024
            print(
                f"update_catalog {name:<16} {len(blob) / 1e6:6.1f} MB -> "
                f"{os.path.getsize(info['path']) / 1e6:6.1f} MB: median "
                f"{statistics.median(took):6.2f} s (min {min(took):.2f}), CPU median "
                f"{statistics.median(cpu):.2f} s, peak RSS +{grew:.0f} MiB"
            )
    finally:
        server.close()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--full-size", action="store_true", help="add synthetic price rows")
    parser.add_argument("--load", action="store_true", help="time update_catalog() instead")
    args = parser.parse_args(argv)

    from catalog_fixture import build

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["RESOURCE_TRACKER_CACHE_DIR"] = os.path.join(tmp, "cache")
        os.environ["RESOURCE_TRACKER_CATALOG_URL"] = "http://127.0.0.1:9/none"
        db = os.path.join(tmp, "catalog.db")
        summary = build(db)
        if args.full_size:
            summary["prices"] += _add_synthetic_prices(db)
        if args.load:
            print(f"catalog: {summary['servers']} servers, {summary['prices']} price rows")
            _load_times(db, args.rounds)
            return 0
        from resource_tracker import catalog

        start = time.perf_counter()
        sample = catalog.recommend_server(RESOURCES, catalog=db, n=5)
        cold = (time.perf_counter() - start) * 1000.0
        local = _times(lambda: catalog.recommend_server(RESOURCES, catalog=db), args.rounds)
        filtered = _times(
            lambda: catalog.recommend_server(
                RESOURCES, catalog=db, vendor="aws", region="us-east-1", allocation="ondemand"
            ),
            args.rounds,
        )
        by_country = _times(
            lambda: catalog.recommend_server(RESOURCES, catalog=db, country="US"), args.rounds
        )
        green = _times(
            lambda: catalog.recommend_server(RESOURCES, catalog=db, green_energy=True), args.rounds
        )
        spp = _times(
            lambda: catalog.recommend_server(RESOURCES, catalog=db, order_by="score_per_price"),
            args.rounds,
        )
        body = json.dumps(sample).encode()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        os.environ["RESOURCE_TRACKER_KEEPER_URL"] = f"http://127.0.0.1:{httpd.server_address[1]}"
        try:
            online = _times(
                lambda: catalog.recommend_server(RESOURCES, catalog="keeper", n=5), args.rounds
            )
        finally:
            httpd.shutdown()
            httpd.server_close()

    def line(name, values):
        med = statistics.median(values)
        print(f"{name:<44} median {med:7.2f} ms   min {min(values):7.2f} ms")

    print(
        f"catalog: {summary['servers']} servers, {summary['prices']} price rows "
        f"(2026-01 dump + 2024-02 AWS prices + test values)"
    )
    print(f"{'local, first call (builds the side index)':<44} {cold:7.2f} ms")
    line("local, cheapest overall", local)
    line("local, aws us-east-1 on-demand", filtered)
    line("local, country=US", by_country)
    line("local, green_energy=True", green)
    line("local, order_by=score_per_price", spp)
    line("online (loopback Keeper stand-in, n=5)", online)
    cases = {
        "cheapest overall": local,
        "aws us-east-1 on-demand": filtered,
        "country=US": by_country,
        "green_energy=True": green,
        "order_by=score_per_price": spp,
    }
    slow = [name for name, values in cases.items() if statistics.median(values) > 50.0]
    verdict = "PASS" if not slow else f"FAIL ({', '.join(slow)})"
    print(f"goal <= 50 ms per local call, every case: {verdict}")
    return 0 if not slow else 1


if __name__ == "__main__":
    sys.exit(main())
