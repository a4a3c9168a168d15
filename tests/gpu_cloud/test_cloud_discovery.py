"""Cloud discovery: local evidence first, then only that vendor's metadata service.

There is no cloud here, so each test builds a fake sysfs tree with the DMI strings a
vendor's machines show (``RESOURCE_TRACKER_SYSFS_ROOT``) and runs a stand-in metadata
service on 127.0.0.1 speaking that vendor's protocol (``gpu_cloud_mock.py``: paths,
required headers, token flows, answer formats), reached through
``RESOURCE_TRACKER_METADATA_URL``. The requests themselves are real HTTP over loopback
made by the C code (libcurl), and the server counts every connection it accepts.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest
from gpu_cloud_mock import AWS_TOKEN, MetadataServer, make_sysfs

from resource_tracker import ResourceTracker, _core
from resource_tracker.cloud import discover_cloud, start_discovery

EXPECTED = {
    "aws": ("m5.large", "eu-central-1"),
    "gcp": ("e2-standard-4", "europe-west1"),
    "azure": ("Standard_D2s_v3", "westeurope"),
    "hcloud": (None, "fsn1-dc14"),
    "upcloud": (None, "fi-hel1"),
    "alicloud": ("ecs.g6.large", "eu-central-1"),
    "ovh": ("b3-8", None),
}


@pytest.fixture
def sysfs(tmp_path, monkeypatch):
    """A function making a fake sysfs tree for a machine and pointing the tracker at it."""

    def make(machine):
        root = make_sysfs(str(tmp_path / ("sys-" + machine)), machine)
        monkeypatch.setenv("RESOURCE_TRACKER_SYSFS_ROOT", root)
        return root

    return make


@pytest.fixture
def metadata(monkeypatch):
    """A function starting a mock metadata server and pointing the tracker at it."""
    servers = []

    def start(vendor, **kwargs):
        server = MetadataServer(vendor, **kwargs).__enter__()
        servers.append(server)
        monkeypatch.setenv("RESOURCE_TRACKER_METADATA_URL", server.url)
        return server

    yield start
    for server in servers:
        server.__exit__(None, None, None)


@pytest.mark.parametrize("vendor", sorted(EXPECTED))
def test_cloud_each_vendor(vendor, sysfs, metadata, catalog_dump):
    """Each vendor's evidence leads to its protocol and to ids found in the Spare Cores catalog."""
    sysfs(vendor)
    server = metadata(vendor)
    start = time.perf_counter()
    info = discover_cloud(timeout=2.0)
    elapsed = time.perf_counter() - start
    instance_type, region = EXPECTED[vendor]
    assert info["vendor"] == vendor
    assert info["instance_type"] == instance_type
    assert info["region"] == region
    assert 0 <= info["discovery_time"] <= elapsed
    assert server.connections >= 1
    servers = [s for s in catalog_dump["server"] if s["vendor_id"] == vendor]
    regions = [r for r in catalog_dump["region"] if r["vendor_id"] == vendor]
    if instance_type:
        assert any(instance_type in (s["server_id"], s["api_reference"]) for s in servers)
    if region:
        assert any(
            region in (r["region_id"], r["api_reference"], *(r["aliases"] or [])) for r in regions
        )


def test_cloud_aws_token_flow(sysfs, metadata):
    """AWS: IMDSv2 token PUT with a TTL header first, then GETs carrying the token."""
    sysfs("aws")
    server = metadata("aws")
    assert discover_cloud()["vendor"] == "aws"
    (m1, p1, h1), (m2, p2, h2) = server.requests
    assert (m1, p1) == ("PUT", "/latest/api/token")
    assert "X-aws-ec2-metadata-token-ttl-seconds" in h1
    assert (m2, p2) == ("GET", "/latest/dynamic/instance-identity/document")
    assert h2["X-aws-ec2-metadata-token"] == AWS_TOKEN


def test_cloud_aws_xen_hypervisor_uuid(sysfs, metadata):
    """Older Xen-based EC2 machines are recognised by /sys/hypervisor/uuid."""
    sysfs("aws-xen")
    metadata("aws")
    assert discover_cloud()["instance_type"] == "m5.large"


def test_cloud_headers_sent(sysfs, metadata):
    """GCP and Azure answer only with their headers (the mocks refuse requests without)."""
    for vendor, header, value in (
        ("gcp", "Metadata-Flavor", "Google"),
        ("azure", "Metadata", "true"),
    ):
        sysfs(vendor)
        server = metadata(vendor)
        assert discover_cloud()["vendor"] == vendor
        assert all(h.get(header) == value for _m, _p, h in server.requests)
        assert "api-version=" in server.requests[0][1] or vendor == "gcp"


@pytest.mark.parametrize("machine", ["qemu", "laptop", "hyperv", "chromebook", "empty"])
def test_cloud_no_evidence_no_connection(machine, sysfs, metadata):
    """Nothing pointing at a cloud: no request at all, 'unknown', in under 20 ms of CPU (this
    thread's CPU time: a loaded machine stretches the wall time, not the work)."""
    sysfs(machine)
    server = metadata("aws")
    start, cpu_start = time.perf_counter(), time.thread_time()
    info = discover_cloud()
    cpu, elapsed = time.thread_time() - cpu_start, time.perf_counter() - start
    assert info == {
        "vendor": "unknown",
        "instance_type": None,
        "region": None,
        "discovery_time": info["discovery_time"],
    }
    assert cpu < 0.020
    assert info["discovery_time"] <= elapsed
    assert server.connections == 0


def test_cloud_this_machine_no_connection(metadata, monkeypatch):
    """The real /sys of this (non-cloud) machine: 'unknown' and zero connections, in under
    20 ms of this thread's CPU time (the wall time is the machine's load)."""
    monkeypatch.delenv("RESOURCE_TRACKER_SYSFS_ROOT", raising=False)
    server = metadata("aws")
    start, cpu_start = time.perf_counter(), time.thread_time()
    raw = _core.discover_cloud(metadata_url=server.url)
    cpu, elapsed = time.thread_time() - cpu_start, time.perf_counter() - start
    assert raw["vendor"] == "unknown"
    assert raw["evidence"] is None and raw["requests"] == 0
    assert cpu < 0.020 and raw["discovery_time"] <= elapsed
    assert server.connections == 0


def test_cloud_switched_off(sysfs, metadata, monkeypatch):
    """RESOURCE_TRACKER_DISCOVER_CLOUD=0: no discovery even with cloud evidence."""
    sysfs("aws")
    server = metadata("aws")
    monkeypatch.setenv("RESOURCE_TRACKER_DISCOVER_CLOUD", "0")
    assert discover_cloud() is None
    assert start_discovery().result() is None
    assert server.connections == 0


def test_cloud_slow_server_timeout_respected(sysfs, metadata):
    """A metadata service that does not answer: the total timeout holds, 'unknown' (it
    returns while the service still holds its answer, not when the service lets go)."""
    sysfs("aws")
    server = metadata("aws", behaviour="held", delay=60.0)
    start = time.perf_counter()
    info = discover_cloud(timeout=0.3)
    elapsed = time.perf_counter() - start
    assert info["vendor"] == "unknown"
    assert server.holding.is_set() and not server.release.is_set()
    assert 0.25 <= elapsed < server.delay  # its own timeout, not the service's answer
    assert server.connections == 1  # the token PUT used the budget; nothing more was tried


@pytest.mark.parametrize("vendor", sorted(EXPECTED))
@pytest.mark.parametrize("behaviour", ["broken", "error", "garbage"])
def test_cloud_broken_server(vendor, behaviour, sysfs, metadata):
    """Connections cut, HTTP 500, or binary garbage with 200: 'unknown', no crash."""
    sysfs(vendor)
    server = metadata(vendor, behaviour=behaviour)
    info = discover_cloud(timeout=1.0)
    assert info["vendor"] == "unknown"
    assert info["instance_type"] is None and info["region"] is None
    assert server.connections >= 1


@pytest.mark.parametrize(
    "garbage",
    [
        b"<html><body>captive portal</body></html>",
        b'{"instanceType": 42, "region": ["x"], "compute": "no"}',
        b'{"instanceType": "m5.large\\r\\nX-Evil: 1", "compute": {"vmSize": "a b"}}',
        b"x" * 5000,
        b"\xff\xfe\x00" * 100,
    ],
)
@pytest.mark.parametrize("vendor", ["aws", "azure", "gcp", "upcloud"])
def test_cloud_garbage_documents(vendor, garbage, sysfs, metadata):
    """Answers that parse but carry no plausible ids are rejected ('unknown')."""
    sysfs(vendor)
    metadata(vendor, behaviour="garbage", garbage=garbage)
    assert discover_cloud(timeout=1.0)["vendor"] == "unknown"


def test_cloud_nothing_listening(sysfs, monkeypatch):
    """Evidence but nothing on the port (connection refused): 'unknown' without waiting out
    the timeout (a refused connection is an answer; measured against a timeout far longer
    than anything a loaded machine adds)."""
    sysfs("gcp")
    monkeypatch.setenv("RESOURCE_TRACKER_METADATA_URL", "http://127.0.0.1:9")
    start = time.perf_counter()
    assert discover_cloud(timeout=30.0)["vendor"] == "unknown"
    assert time.perf_counter() - start < 30.0 / 2


def test_cloud_background_returns_at_once(sysfs, metadata):
    """start_discovery() returns at once (the service still holds its answer); result()
    waits for the answer; discovery_time spans the discovery: at least the time the test saw
    the service hold the answer, at most the time from the start to the answer."""
    sysfs("azure")
    server = metadata("azure", behaviour="held", delay=60.0)
    start = time.perf_counter()
    job = start_discovery(timeout=30.0)
    assert not job.done()  # a thread start, nothing waited on
    assert job.result(timeout=0.01) is None  # still running
    assert server.holding.wait(30.0)  # the request is out, and held
    seen_held = time.perf_counter()
    assert job.result(timeout=0.05) is None  # held: no answer, however long it waits
    held = time.perf_counter() - seen_held
    server.release.set()
    info = job.result()
    answered = time.perf_counter() - start
    assert info["vendor"] == "azure" and info["instance_type"] == "Standard_D2s_v3"
    assert held <= info["discovery_time"] <= answered


def test_cloud_background_releases_gil(sysfs, metadata):
    """Python keeps running while the C discovery waits on the network: a million steps of
    Python run while the service holds its answer and the job is still waiting for it."""
    sysfs("gcp")
    server = metadata("gcp", behaviour="held", delay=60.0)
    job = start_discovery(timeout=30.0)
    assert server.holding.wait(30.0)
    count = 0
    for _ in range(1_000_000):
        count += 1
    assert not job.done()  # all of that ran while the C thread waited on the network
    server.release.set()
    assert job.result()["vendor"] == "gcp"


def test_cloud_tracker_cloud_info(sysfs, metadata):
    """ResourceTracker starts at once and fills cloud_info from the background discovery."""
    sysfs("hcloud")
    server = metadata("hcloud", behaviour="held", delay=60.0)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        # the service answers only once the tracker has started: a start that waited for the
        # discovery would have waited out its timeout and found nothing
        tracker = ResourceTracker(pid=proc.pid, interval=0.05, discover_server=False)
        server.release.set()
        try:
            info = tracker.cloud_info
        finally:
            tracker.stop()
    finally:
        proc.kill()
        proc.wait()
    assert info["vendor"] == "hcloud" and info["region"] == "fsn1-dc14"


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare")
def test_cloud_without_network_namespace(tmp_path):
    """In a process with no network at all (unshare -n): no-evidence answers at once (under
    20 ms of this thread's CPU) and cloud evidence with an unreachable service ends as
    'unknown' because nothing could connect (the attempt's own error), not by waiting out its
    timeout; each discovery_time within the wall time the call took."""
    code = (
        "import json, os, time\n"
        "from resource_tracker import _core\n"
        "from resource_tracker.cloud import discover_cloud\n"
        "out = {}\n"
        "for machine in ('qemu', 'aws'):\n"
        "    root = os.environ[machine.upper() + '_ROOT']\n"
        "    os.environ['RESOURCE_TRACKER_SYSFS_ROOT'] = root\n"
        "    wall, cpu = time.perf_counter(), time.thread_time()\n"
        "    out[machine] = discover_cloud(timeout=1.0)\n"
        "    out[machine + '_cpu'] = time.thread_time() - cpu\n"
        "    out[machine + '_wall'] = time.perf_counter() - wall\n"
        "out['aws_raw'] = _core.discover_cloud(\n"
        "    sysfs_root=os.environ['AWS_ROOT'],\n"
        "    metadata_url=os.environ['RESOURCE_TRACKER_METADATA_URL'],\n"
        "    timeout=1.0,\n"
        ")\n"
        "print(json.dumps(out))\n"
    )
    env = dict(os.environ)
    env["QEMU_ROOT"] = make_sysfs(str(tmp_path / "qemu"), "qemu")
    env["AWS_ROOT"] = make_sysfs(str(tmp_path / "aws"), "aws")
    env["RESOURCE_TRACKER_METADATA_URL"] = "http://127.0.0.1:9"
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("unshare -n is not permitted here: " + probe.stderr.decode().strip())
    result = subprocess.run(
        ["unshare", "-n", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["qemu"]["vendor"] == "unknown" and out["qemu_cpu"] < 0.020
    assert out["qemu"]["discovery_time"] <= out["qemu_wall"]
    assert out["aws"]["vendor"] == "unknown"
    assert out["aws"]["discovery_time"] <= out["aws_wall"]
    raw = out["aws_raw"]
    assert raw["evidence"] == "aws" and raw["vendor"] == "unknown", raw
    assert "Couldn't connect" in raw["error"], raw
