"""An independent, plain-Python answer to 'which servers fit, cheapest first', computed from the
raw rows of the test catalog (server_price, not the side index the product builds), for
checking recommend_server() against."""

from __future__ import annotations

import json
import sqlite3

RATE = 1.17


class Reference:
    def __init__(self, path):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        self.servers = {
            (r["vendor_id"], r["server_id"]): dict(r) for r in conn.execute("SELECT * FROM server")
        }
        self.prices = [dict(r) for r in conn.execute("SELECT * FROM server_price")]
        self.regions = [dict(r) for r in conn.execute("SELECT * FROM region")]
        self.links = {}
        for r in conn.execute(
            "SELECT vendor_id, compliance_framework_id FROM vendor_compliance_link"
        ):
            self.links.setdefault(r[0], set()).add(r[1])
        self.scores = {}
        for r in conn.execute(
            "SELECT vendor_id, server_id, score FROM benchmark_score "
            "WHERE benchmark_id = 'stress_ng:bestn'"
        ):
            key = (r[0], r[1])
            self.scores[key] = max(self.scores.get(key, r[2]), r[2])
        conn.close()

    def region_ok(self, vendor, region_id, regions=None, countries=None, green=None):
        row = next(
            r for r in self.regions if r["vendor_id"] == vendor and r["region_id"] == region_id
        )
        if regions is not None:
            names = {row["region_id"], row["api_reference"], *json.loads(row["aliases"] or "[]")}
            if not names & set(regions):
                return False
        if countries is not None and row["country_id"] not in countries:
            return False
        if green and not row["green_energy"]:
            return False
        return True

    def rank(self, cpu=1, memory=0, gpu=0, vram=0, vendors=None, regions=None, countries=None,
             archs=None, allocation="any", compliance=None, green=None, min_score=None,
             max_price=None, order_by="price", rate=RATE):  # fmt: skip
        """[(price, vendor_id, server_id, score)] of every fitting server, best first."""
        best = {}
        for p in self.prices:
            key = (p["vendor_id"], p["server_id"])
            s = self.servers.get(key)
            if s is None or s["status"] != "ACTIVE" or p["status"] != "ACTIVE":
                continue
            if s["vcpus"] < cpu or s["memory_amount"] < memory or (s["gpu_count"] or 0) < gpu:
                continue
            if vram and (
                (s["gpu_memory_total"] or 0) < vram
                or (s["gpu_memory_min"] or 0) < vram / max(gpu, 1)
            ):
                continue
            if vendors is not None and s["vendor_id"] not in vendors:
                continue
            if archs is not None and s["cpu_architecture"].lower() not in archs:
                continue
            if compliance is not None and not set(compliance) <= self.links.get(
                s["vendor_id"], set()
            ):
                continue
            if allocation != "any" and p["allocation"] != allocation.upper():
                continue
            if not self.region_ok(p["vendor_id"], p["region_id"], regions, countries, green):
                continue
            usd = p["price"] * (rate if p["currency"] == "EUR" else 1.0)
            best[key] = min(best.get(key, usd), usd)
        out = []
        for key, price in best.items():
            score = self.scores.get(key)
            if max_price is not None and price > max_price:
                continue
            if min_score is not None and (score is None or score < min_score):
                continue
            out.append((price, key[0], key[1], score))
        if order_by == "price":
            s = self.servers
            out.sort(
                key=lambda t: (t[0], s[t[1:3]]["vcpus"], s[t[1:3]]["memory_amount"], t[1], t[2])
            )
        else:
            out.sort(key=lambda t: (t[3] is None, -(t[3] or 0) / t[0], t[0], t[1], t[2]))
        return out
