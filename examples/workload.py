"""A short, real workload for the demo: CPU, memory, a child process and disk I/O.

Run it alone (``python examples/workload.py``) or under the tracker (``make demo``).
"""

import os
import subprocess
import sys
import tempfile
import time


def burn(seconds):
    """Keep one core busy for `seconds`."""
    end = time.monotonic() + seconds
    total = 0
    while time.monotonic() < end:
        total += 1
    return total


def main():
    print("workload: computing on one core for 1.5 s", flush=True)
    burn(1.5)
    print("workload: holding 300 MiB of memory", flush=True)
    block = bytearray(300 * 1024 * 1024)
    for i in range(0, len(block), 4096):
        block[i] = 1
    print("workload: a child process computes for 1 s while the parent does too", flush=True)
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time\nend=time.monotonic()+1\nwhile time.monotonic()<end: pass",
        ]
    )
    burn(1.0)
    child.wait()
    print("workload: writing 64 MiB to disk", flush=True)
    with tempfile.NamedTemporaryFile(dir=os.getcwd(), prefix=".demo-") as f:
        chunk = os.urandom(1024 * 1024)
        for _ in range(64):
            f.write(chunk)
        f.flush()
        os.fsync(f.fileno())
    del block
    time.sleep(0.5)
    print("workload: done", flush=True)


if __name__ == "__main__":
    main()
