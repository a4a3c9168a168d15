"""The attribution rule of docs/code_profile.md written out plainly in Python, one sample at a
time (as the package computed it before the rule moved to C, csrc/attribution.c): the oracle
the C attribution's figures are compared with, for a tracked process's own record."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from resource_tracker.code_profile import origin_of

Key = Tuple[str, str, int]


class Reference:
    """A record's figures by the rule, from its samples and the tree's columns."""

    def __init__(self, record: Dict[str, Any], columns: Dict[str, Any], start_time: float):
        self.frames, self.stacks = record["frames"], record["stacks"]
        self.ts = [float(t) for t in columns["timestamp"]]
        n = len(self.ts)
        self.cpu = [float(u) + float(s) for u, s in zip(columns["utime"], columns["stime"])]
        self.mem = [float(m) for m in columns["memory"]]
        self.gpu = [float(g) for g in columns.get("gpu_usage") or [0.0] * n]
        self.start = float(start_time or self.ts[0])
        by_row: Dict[int, List[Tuple[int, float, bool, int]]] = {}
        for row, thread, stack, cpu_us in record["samples"]:
            if 0 <= row < n and 0 <= stack < len(self.stacks):
                is_main = bool(record["threads"][thread][1])
                by_row.setdefault(row, []).append((stack, cpu_us / 1e6, is_main, thread))
        self.segments = self._segments(by_row)

    def _segments(
        self, by_row: Dict[int, List[Tuple[int, float, bool, int]]]
    ) -> List[Dict[str, Any]]:
        out, first, unexplained = [], 0, 0.0
        for row in sorted(by_row):
            before = self.ts[first - 1] if first else self.start
            rows = range(first, row + 1)
            cpu = sum(self.cpu[r] for r in rows)
            spans = [max(self.ts[r] - (self.ts[r - 1] if r else self.start), 0.0) for r in rows]
            gpu = sum(self.gpu[r] * s for r, s in zip(rows, spans))
            change = self.mem[row] - (self.mem[first - 1] if first else self.mem[first])
            samples = by_row[row]
            unexplained += cpu - sum(s[1] for s in samples)
            remainder = max(unexplained, 0.0)
            unexplained -= remainder
            # the main thread's samples share the remainder evenly (the captures' own schedule
            # may take several in one interval), else the busiest thread's
            heirs = [i for i, s in enumerate(samples) if s[2]]
            if not heirs:
                heirs = [max(range(len(samples)), key=lambda i: samples[i][1])]
            total = sum(s[1] for s in samples) + remainder
            entries = []
            for i, (stack, c, _, thread) in enumerate(samples):
                each = remainder / len(heirs) if i in heirs else 0.0
                part = c + each
                weight = part / total if total > 0 else (1.0 / len(heirs) if i in heirs else 0.0)
                entries.append((stack, part, change * weight, gpu * weight, thread))
            out.append(
                {"timestamp": self.ts[row], "seconds": max(self.ts[row] - before, 0.0),
                 "cpu": total, "peak": max(self.mem[r] for r in rows), "entries": entries}
            )  # fmt: skip
            first = row + 1
        return out

    def keys_of(self, stack: int, by: str, user_code: bool) -> List[Key]:
        chain = []
        while stack >= 0:
            stack, frame = self.stacks[stack]
            function, file, line, first_line = self.frames[frame]
            chain.append((function, file, first_line if by == "function" else line))
        keys = chain[::-1]
        if user_code:
            keys = [k for k in keys if origin_of(k[1]) == "user"] or keys[-1:]
        return keys

    def profile(
        self, by: str, user_code: bool, start: Optional[float] = None, end: Optional[float] = None
    ) -> Dict[Key, Dict[str, float]]:
        totals: Dict[Key, Dict[str, float]] = {}
        names = ("cpu_seconds", "cpu_self_seconds", "seconds_on_stack", "memory_peak")
        for seg in self.segments:
            if (start is not None and seg["timestamp"] <= start) or (
                end is not None and seg["timestamp"] > end
            ):
                continue
            seen = set()
            for stack, cpu, memory, gpu, _ in seg["entries"]:
                keys = self.keys_of(stack, by, user_code)
                for key in dict.fromkeys(keys):
                    t = totals.setdefault(key, dict.fromkeys(names, 0.0))
                    t["cpu_seconds"] += cpu
                    t["memory_growth"] = t.get("memory_growth", 0.0) + memory
                    t["gpu_seconds"] = t.get("gpu_seconds", 0.0) + gpu
                    t["samples"] = t.get("samples", 0) + 1
                    t["memory_peak"] = max(t["memory_peak"], seg["peak"])
                    if key not in seen:
                        t["seconds_on_stack"] += seg["seconds"]
                        seen.add(key)
                totals[keys[-1]]["cpu_self_seconds"] += cpu
        return totals

    def running(self, seg: Dict[str, Any]) -> Key:
        """The user code of the busiest sampled thread running user code (else the busiest):
        its CPU over the segment, its last sample's stack."""
        entries = seg["entries"]
        cpu: Dict[int, float] = {}
        for e in entries:
            cpu[e[4]] = cpu.get(e[4], 0.0) + e[1]
        last = [e for i, e in enumerate(entries) if all(x[4] != e[4] for x in entries[i + 1 :])]
        users = [e for e in last if origin_of(self.keys_of(e[0], "line", True)[-1][1]) == "user"]
        busiest = max(users or last, key=lambda e: cpu[e[4]])
        return self.keys_of(busiest[0], "line", True)[-1]

    def timeline(self) -> List[Tuple[Any, ...]]:
        return [(s["timestamp"], *self.running(s), s["cpu"], s["peak"]) for s in self.segments]
