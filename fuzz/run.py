"""Build and run the fuzz targets of resource-tracker for a bounded time each.

    python3 fuzz/run.py [--seconds 60] [--only NAME ...] [--regressions-only]

C targets (fuzz_*.c, libFuzzer + ASan + UBSan, built with clang) fuzz the procfs parsers of
csrc/procfs_parse.c and the metadata answer parsers of csrc/cloud.c (and the catalog parser of
csrc/keeper.c when it exists); Python targets (fuzz_*.py, atheris) fuzz the cgroup file parsers
of resource_tracker/server_info.py, snapshot loading, the catalog loader, the `run --code`
agents' folder reader, the dashboard's Prometheus answer reader and tuning records. Each run starts
from a seed corpus written at fuzz time into a temporary directory from this machine's real
files, plus the committed regression inputs of fuzz/regressions/<target>/ (every crash found is
kept there and replayed by tests/reliability/test_reliability_fuzz.py, which runs no random
input: random fuzzing lives here only). One line of figures per target.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CSRC = os.path.join(ROOT, "csrc")
BUILD = os.path.join(ROOT, "build", "fuzz")
REGRESSIONS = os.path.join(HERE, "regressions")

# target -> the csrc files it links (fuzz_cloud.c brings its own http_request)
C_TARGETS = {
    "pid_stat": ["procfs_parse.c"],
    "pid_io": ["procfs_parse.c"],
    "smaps_rollup": ["procfs_parse.c"],
    "proc_stat": ["procfs_parse.c"],
    "meminfo": ["procfs_parse.c"],
    "net_dev": ["procfs_parse.c"],
    "diskstats": ["procfs_parse.c"],
    "mountinfo": ["procfs_parse.c"],
    "cloud": ["cloud.c"],
    "keeper": ["keeper.c"],
    "stats": ["stats.c", "columns.c"],
    "cgroup_files": ["cgroup_parse.c"],
}
PY_TARGETS = ["cgroup", "snapshot", "catalog", "agent_records", "prometheus_answer", "tuning"]
LIBS = {"cloud": ["-lcjson"], "keeper": ["-lcjson"]}


def clang():
    for name in ("clang", "clang-16", "clang-15", "clang-14"):
        path = shutil.which(name)
        if path:
            return path
    return None


def available_c_targets():
    """The C targets whose sources exist (fuzz_keeper.c waits for csrc/keeper.c)."""
    return [
        name
        for name, sources in C_TARGETS.items()
        if os.path.exists(os.path.join(HERE, f"fuzz_{name}.c"))
        and all(os.path.exists(os.path.join(CSRC, s)) for s in sources)
    ]


def clean_env(**extra):
    """The environment without a preloaded sanitizer runtime (make sanitize sets one: clang's
    libFuzzer binaries carry their own)."""
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS")}
    env.update(extra)
    return env


def build(name, directory=BUILD):
    """Path of the fuzzer binary of target name in directory (rebuilt when a source is newer)."""
    os.makedirs(directory, exist_ok=True)
    out = os.path.join(directory, f"fuzz_{name}")
    sources = [os.path.join(HERE, f"fuzz_{name}.c")] + [
        os.path.join(CSRC, s) for s in C_TARGETS[name]
    ]
    headers = glob.glob(os.path.join(CSRC, "*.h")) + glob.glob(os.path.join(HERE, "fuzz_*.h"))
    deps = sources + headers
    if os.path.exists(out) and os.path.getmtime(out) >= max(os.path.getmtime(d) for d in deps):
        return out
    # built under a name of its own, then renamed: a run beside this one (the suite and its
    # sanitizer run share the test's build folder) never executes a half-written binary
    partial = f"{out}.{os.getpid()}.partial"
    cmd = [
        clang(),
        "-g",
        "-O1",
        "-std=c11",
        "-D_GNU_SOURCE",
        "-fsanitize=fuzzer,address,undefined",
        "-fno-sanitize-recover=undefined",
        "-I",
        CSRC,
        "-I",
        HERE,
        *sources,
        "-o",
        partial,
        *LIBS.get(name, []),
    ]
    subprocess.run(cmd, check=True, env=clean_env())
    os.replace(partial, out)
    return out


# -- seed corpus from this machine -------------------------------------------------------


def _read(path, limit=1 << 20):
    try:
        with open(path, "rb") as f:
            return f.read(limit)
    except OSError:
        return None


def _proc_files(name, count=20):
    """Up to count /proc/<pid>/<name> files of live processes."""
    out = []
    for pid in sorted((p for p in os.listdir("/proc") if p.isdigit()), key=int)[:200]:
        data = _read(f"/proc/{pid}/{name}")
        if data:
            out.append(data)
        if len(out) >= count:
            break
    return out


def _cloud_seeds():
    """One answer sequence per vendor in the shape of its metadata service (cloud.c)."""
    sep = b"\n@@\n"
    aws = b'{"instanceType":"m5.large","region":"us-east-1","accountId":"1"}'
    azure = b'{"compute":{"vmSize":"Standard_D2s_v3","location":"westeurope"}}'
    upcloud = b'{"cloud_name":"upcloud","region":"fi-hel1","plan":"2xCPU-4GB"}'
    ovh = b'{"availability_zone":"nova","region":"gra7","uuid":"x"}'
    return [
        b"\x00" + b"TOKEN123" + sep + aws,
        b"\x01" + b"projects/1/machineTypes/e2-medium" + sep + b"projects/1/zones/europe-west1-b",
        b"\x02" + azure,
        b"\x03" + b"hostname: x\navailability-zone: fsn1-dc14\nregion: eu-central\n",
        b"\x04" + upcloud,
        b"\x05" + b"TOKEN" + sep + b"ecs.g6.large" + sep + b"cn-hangzhou",
        b"\x06" + b"b3-8" + sep + ovh,
        b"\x00" + b"!reset",
        b"\x02" + b"#not found",
    ]


def _cgroup_seeds():
    """The real cgroup membership, mount table and limit files, in fuzz_cgroup.py's format."""
    sep = b"\n@@\n"
    parts = [_read("/proc/self/cgroup") or b"0::/\n", _read("/proc/self/mountinfo") or b""]
    for name in ("cpu.max", "memory.max", "cpu.cfs_quota_us", "cpu.cfs_period_us"):
        parts.append(_read(f"/sys/fs/cgroup/{name}") or b"max\n")
    parts += [b"", b"anon 4096\nfile_mapped 0\ntotal_rss 8192\n", b"1\n42\n"]
    return [sep.join(parts), sep.join([b"4:cpu,cpuacct:/a/b\n3:memory:/a\n", b"", b"50000 100000"])]


def _snapshot_seeds():
    """dumps() of a short real tracking run of this process."""
    code = (
        "import sys; from resource_tracker import ResourceTracker as R\n"
        "t = R(interval=0.05, discover_server=True, discover_cloud=False)\n"
        "t.wait_for_samples(3, 10); t.stop(); sys.stdout.write(t.dumps())\n"
    )
    env = dict(os.environ, RESOURCE_TRACKER_METADATA_URL="http://127.0.0.1:9")
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, cwd=ROOT, env=env, timeout=60
    )
    seeds = [b'{"format":"resource-tracker"}', b"[]", b"{}"]
    if proc.returncode == 0 and proc.stdout:
        seeds.insert(0, proc.stdout)
    return seeds


def _stats_seeds():
    """float64 columns: a CPU ramp, repeated values, a constant, one value, NaN and inf."""
    from array import array

    ramp = array("d", (i * 0.01 for i in range(500))).tobytes()
    repeated = array("d", [float(i % 3) for i in range(300)]).tobytes()
    odd = array("d", [1.0, float("nan"), float("inf"), -float("inf"), 0.0, -0.0]).tobytes()
    return [ramp, repeated, array("d", [5.0] * 64).tobytes(), array("d", [2.0]).tobytes(), odd]


def _keeper_seeds():
    """Keeper answers in the shape of /servers and /server/{v}/{s}/prices (catalog rows)."""
    sep = b"\n@@\n"
    servers = (
        b'[{"vendor_id":"aws","server_id":"m5.large","api_reference":"m5.large",'
        b'"vcpus":2,"memory_amount":8192,"gpu_count":0,"min_price":0.096,'
        b'"score_per_price":100.5,"architecture":"x86_64"}]'
    )
    prices = b'[{"region_id":"us-east-1","zone_id":"use1-az1","price":0.096,"currency":"USD"}]'
    return [
        b"aws" + sep + b"m5.large" + sep + b"us-east-1,eu-west-1" + sep + servers,
        b"gcp" + sep + b"e2 medium/%" + sep + b"" + sep + prices,
        b"x" + sep + b"y" + sep + b"z" + sep + b"\x01" + b"upstream down",
        b"x" + sep + b"y" + sep + b"z" + sep + b"!",
    ]


def _tuning_seeds():
    """Tuning records as the decorator keeps them (fuzz_tuning.py's), as JSON."""
    import json

    records = load_python_target("tuning").seed_records()
    return [json.dumps(records).encode(), json.dumps(records[0]).encode(), b"[]"]


def _catalog_seeds():
    """Catalog dumps: SQL text as iterdump() and the sqlite3 shell write it (a real server row
    of the 2026-01 dump in tests/data), one with a generated column, and a SQLite file."""
    import sqlite3

    head = (
        "BEGIN TRANSACTION;\nCREATE TABLE vendor (vendor_id, name, status);\n"
        "CREATE TABLE server (vendor_id TEXT, server_id TEXT, vcpus INTEGER, memory_amount "
        "INTEGER, x TEXT GENERATED ALWAYS AS (replace(server_id, 'a', 'aa')) VIRTUAL);\n"
    )
    rows = (
        "INSERT INTO \"vendor\" VALUES('aws','Amazon Web Services','ACTIVE');\n"
        "INSERT INTO server VALUES('aws','t4g.medium',2,4096),('aws','m5.large',2,8192);\n"
        "INSERT INTO server(vendor_id, server_id) VALUES('a', replace('x\\ny','\\n',char(10)));\n"
        "INSERT INTO vendor VALUES(X'00ff', -1.5e3, NULL);\nCOMMIT;\n"
    )
    path = os.path.join(tempfile.mkdtemp(prefix="fuzz-seed-"), "seed.db")
    conn = sqlite3.connect(path)
    conn.executescript(head.replace("BEGIN TRANSACTION;", "") + rows.replace("COMMIT;", ""))
    conn.commit()
    conn.close()
    db = _read(path)
    shutil.rmtree(os.path.dirname(path), ignore_errors=True)
    return [(head + rows).encode(), rows.encode(), db]


def _cgroup_file_seeds():
    """The tree source's cgroup files: this machine's where readable, and v2 / v1 examples."""
    found = [_read(p) for p in glob.glob("/sys/fs/cgroup/*/memory.stat")[:1]
             + glob.glob("/sys/fs/cgroup/cpuacct/cpuacct.*")[:3]
             + glob.glob("/sys/fs/cgroup/*/blkio.throttle.io_service_bytes")[:1]]  # fmt: skip
    return found + [
        b"usage_usec 5000000\nuser_usec 4000000\nsystem_usec 1000000\n",
        b"8:0 rbytes=1000 wbytes=4096 rios=1 wios=1 dbytes=0 dios=0\n8:16 rbytes=5\n",
        b"8:0 Read 4096\n8:0 Write 512\n8:0 Total 4608\nTotal 4608\n",
        b"1\n22\n333\n4444\n55555\n666666\n7777777\n88888888\n999999999\n",
    ]


def _agent_record_seeds():
    """The record an agent wrote in a real `run --code` of a short Python command (the
    snapshot's code_profile.processes[0]), and small hostile ones."""
    with tempfile.TemporaryDirectory(prefix="fuzz-seed-") as out:
        code = "import time\nend = time.process_time() + 0.3\n"
        code += "while time.process_time() < end: pass\n"
        cmd = [sys.executable, "-m", "resource_tracker", "run", "--code", "-q", "-f", "json",
               "-o", out, "--interval", "0.02", "--", sys.executable, "-c", code]  # fmt: skip
        env = dict(os.environ, RESOURCE_TRACKER_METADATA_URL="http://127.0.0.1:9")
        proc = subprocess.run(cmd, capture_output=True, cwd=ROOT, env=env, timeout=120)
        found = []
        if proc.returncode == 0:
            with open(os.path.join(out, "resource-tracker.json"), encoding="utf-8") as f:
                processes = json.load(f)["code_profile"].get("processes") or []
            found = [json.dumps(p).encode() for p in processes[:1]]
    chain = {"version": 1, "frames": [["f", "f.py", 1, 1]],
             "stacks": [[i - 1, 0] for i in range(200)], "threads": [[1, 0]],
             "samples": [[0, 0, 199, 1]],
             "columns": {"timestamp": [1.0], "memory": [1.0]}}  # fmt: skip
    return found + [json.dumps(chain).encode(), b"[" * 5000, b'{"version": 1, "x": NaN}', b"{}"]


def _prometheus_answer_seeds():
    """query_range answers in Prometheus's format (matrix results, values as text)."""

    def matrix(series):
        result = [{"metric": dict(labels, __name__="m"), "values": [[1000.0, value]]}
                  for labels, value in series]  # fmt: skip
        data = {"resultType": "matrix", "result": result}
        return json.dumps({"status": "success", "data": data}).encode()

    mf = {"flow": "TrainFlow", "step": "train", "run_id": "12", "task_id": "3", "job": "mf"}
    return [
        matrix([({"job": "etl", "pid": "1"}, "990"), ({"job": "etl", "pid": "2"}, "1.5e9")]),
        matrix([(mf, "1048576"), ({"job": "x\u202e", "instance": "h:1"}, "NaN")]),
        matrix([({"job": "a"}, "+Inf"), ({"job": "b"}, "5e-324"), ({"job": "c"}, "1.797e308")]),
        b'{"status":"error","errorType":"bad_data","error":"parse error"}',
        b"[" * 3000,
    ]


def seeds(name):
    """The seed inputs of target name, from this machine's real files."""
    stat = _read("/proc/stat") or b""
    table = {
        "pid_stat": lambda: _proc_files("stat"),
        "pid_io": lambda: [_read("/proc/self/io") or b""] + _proc_files("io", 5),
        "smaps_rollup": lambda: [_read("/proc/self/smaps_rollup") or b""],
        "proc_stat": lambda: [stat],
        "meminfo": lambda: [_read("/proc/meminfo") or b""],
        "net_dev": lambda: [_read("/proc/net/dev") or b""],
        "diskstats": lambda: [_read("/proc/diskstats") or b""],
        "mountinfo": lambda: [_read("/proc/self/mountinfo") or b""],
        "cloud": _cloud_seeds,
        "keeper": _keeper_seeds,
        "cgroup": _cgroup_seeds,
        "snapshot": _snapshot_seeds,
        "stats": _stats_seeds,
        "cgroup_files": _cgroup_file_seeds,
        "catalog": _catalog_seeds,
        "agent_records": _agent_record_seeds,
        "prometheus_answer": _prometheus_answer_seeds,
        "tuning": _tuning_seeds,
    }
    return [s for s in table[name]() if s is not None]


def write_corpus(name, directory):
    os.makedirs(directory, exist_ok=True)
    inputs = seeds(name)
    reg = os.path.join(REGRESSIONS, name)
    if os.path.isdir(reg):
        for path in sorted(glob.glob(os.path.join(reg, "*"))):
            inputs.append(_read(path))
    for i, data in enumerate(inputs):
        with open(os.path.join(directory, f"seed-{i:03d}"), "wb") as f:
            f.write(data)
    return len(inputs)


# -- running -------------------------------------------------------------------------------


def mutate(data, rng):
    """data with 1-7 random edits: cuts, random bytes, a flipped byte, a token of the formats."""
    data = bytearray(data)
    for _ in range(rng.randrange(1, 8)):
        op = rng.randrange(4)
        pos = rng.randrange(len(data) + 1)
        if op == 0 and data:
            del data[pos : pos + rng.randrange(1, 64)]
        elif op == 1:
            data[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 16)))
        elif op == 2 and data:
            data[min(pos, len(data) - 1)] = rng.randrange(256)
        else:
            data[pos:pos] = rng.choice([b"\n@@\n", b" - ", b"0::/", b"max", b'"', b"{", b"null"])
    return bytes(data)


def load_python_target(name):
    """The module fuzz/fuzz_<name>.py (its test_one_input)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, f"fuzz_{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_random(name, seconds):
    """A Python target without atheris: random mutations of its seeds for seconds (a new
    random seed each run, printed so that a crash can be replayed)."""
    import random
    import traceback

    module = load_python_target(name)
    inputs = seeds(name)
    rng_seed = random.SystemRandom().randrange(2**32)
    rng = random.Random(rng_seed)
    start = time.monotonic()
    n = 0
    while time.monotonic() - start < seconds:
        data = mutate(rng.choice(inputs), rng)
        try:
            module.test_one_input(data)
        except Exception:
            traceback.print_exc()
            path = os.path.join(ROOT, "build", "fuzz", "artifacts", name, f"crash-{n}")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
            print(f"fuzz {name:13s} CRASH random seed {rng_seed}: input kept in {path}")
            return False
        n += 1
    print(f"fuzz {name:13s} ok    {seconds:6.1f} s  {n:>10} executions  (random, no atheris)")
    return True


def run_target(name, seconds, workdir, python_target):
    corpus = os.path.join(workdir, name)
    nseeds = write_corpus(name, corpus)
    artifacts = os.path.join(ROOT, "build", "fuzz", "artifacts", name)
    os.makedirs(artifacts, exist_ok=True)
    flags = [
        f"-max_total_time={seconds}",
        "-print_final_stats=1",
        "-max_len=65536",
        "-timeout=10",
        "-rss_limit_mb=2048",
        f"-artifact_prefix={artifacts}/",
        corpus,
    ]
    if python_target:
        cmd = [sys.executable, os.path.join(HERE, f"fuzz_{name}.py"), *flags]
    else:
        cmd = [build(name), *flags]
    env = clean_env(ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1")
    env["RESOURCE_TRACKER_METADATA_URL"] = "http://127.0.0.1:9"
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=seconds + 600)
    elapsed = time.monotonic() - start
    log = proc.stdout + proc.stderr
    execs = re.findall(r"stat::number_of_executed_units:\s*(\d+)", log)
    cov = re.findall(r"cov: (\d+)", log)
    ok = proc.returncode == 0
    print(
        f"fuzz {name:13s} {'ok   ' if ok else 'CRASH'} {elapsed:6.1f} s  "
        f"{int(execs[-1]) if execs else 0:>10} executions  "
        f"{cov[-1] if cov else '?':>5} coverage points  seeds {nseeds}",
        flush=True,
    )
    if not ok:
        print(log[-6000:])
        print(f"crash input kept in {artifacts}/: copy it to fuzz/regressions/{name}/")
    return ok


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=int(os.environ.get("FUZZ_SECONDS", "60")))
    ap.add_argument("--only", nargs="*", help="target names (default: all)")
    args = ap.parse_args(argv)
    if clang() is None:
        print("fuzz: clang is missing (apt-get install clang libclang-rt-14-dev)")
        return 2
    names = available_c_targets() + PY_TARGETS
    if args.only:
        names = [n for n in names if n in args.only]
    try:
        import atheris  # noqa: F401

        guided = True
    except ImportError:
        print("fuzz: atheris is missing (pip install atheris): the Python targets get random")
        print("      mutations of their seeds instead of coverage-guided fuzzing")
        guided = False
    failed = []
    with tempfile.TemporaryDirectory(prefix="rt-fuzz-corpus-") as workdir:
        for name in names:
            if name in PY_TARGETS and not guided:
                ok = run_random(name, args.seconds)
            else:
                ok = run_target(name, args.seconds, workdir, name in PY_TARGETS)
            if not ok:
                failed.append(name)
    if failed:
        print(f"fuzz: crashes in {', '.join(failed)}")
        return 1
    print(f"fuzz: {len(names)} targets, {args.seconds} s each, no crash")
    return 0


if __name__ == "__main__":
    sys.exit(main())
