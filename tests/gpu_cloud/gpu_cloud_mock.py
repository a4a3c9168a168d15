"""Stand-ins for the cloud: a metadata HTTP server on 127.0.0.1 and fake sysfs trees.

The server speaks each vendor's instance-metadata protocol as documented by the vendor
(paths, required headers, token flows, answer formats) with made-up but realistic answers,
and counts every TCP connection it accepts, so tests can prove that no request was made.
"""

from __future__ import annotations

import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

from loopback import LoopbackHTTPServer

AWS_TOKEN = "AQAEAFakeTokenForTests_0123456789=="
ALI_TOKEN = "ali-token-0123456789"

# What each fake machine's DMI says (files under <root>/class/dmi/id/ unless a path is given).
SYSFS = {
    "aws": {"sys_vendor": "Amazon EC2", "product_name": "m5.large", "bios_vendor": "Amazon EC2"},
    "aws-xen": {
        "sys_vendor": "Xen",
        "product_name": "HVM domU",
        "hypervisor/uuid": "ec2e1916-9099-7caf-fd21-012345abcdef",
    },
    "gcp": {"sys_vendor": "Google", "product_name": "Google Compute Engine"},
    "azure": {
        "sys_vendor": "Microsoft Corporation",
        "product_name": "Virtual Machine",
        "chassis_asset_tag": "7783-7084-3265-9085-8269-3286-77",
    },
    "hcloud": {"sys_vendor": "Hetzner", "product_name": "vServer"},
    "upcloud": {"sys_vendor": "UpCloud", "product_name": "Cloud Server"},
    "alicloud": {"sys_vendor": "Alibaba Cloud", "product_name": "Alibaba Cloud ECS"},
    "ovh": {"sys_vendor": "OpenStack Foundation", "product_name": "OpenStack Nova"},
    # not clouds (or not identifiable as one): no request may be made
    "qemu": {"sys_vendor": "QEMU", "product_name": "Standard PC (i440FX + PIIX, 1996)"},
    "laptop": {"sys_vendor": "Dell Inc.", "product_name": "XPS 13 9310", "bios_vendor": "Dell"},
    "hyperv": {
        "sys_vendor": "Microsoft Corporation",
        "product_name": "Virtual Machine",
        "chassis_asset_tag": "0000-0000-0000-0000-0000-0000-00",
    },
    "chromebook": {"sys_vendor": "Google", "product_name": "Eve", "bios_vendor": "coreboot"},
    "empty": {},
}


def make_sysfs(root, machine):
    """Write the fake sysfs tree of ``machine`` (a SYSFS key) under ``root``; returns root."""
    os.makedirs(os.path.join(root, "class", "dmi", "id"), exist_ok=True)
    for name, value in SYSFS[machine].items():
        path = os.path.join(root, name if "/" in name else os.path.join("class/dmi/id", name))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(value + "\n")
    return root


def _aws(h):
    if h.command == "PUT" and h.path == "/latest/api/token":
        if "X-aws-ec2-metadata-token-ttl-seconds" not in h.headers:
            return 400, "text/plain", "missing ttl"
        return 200, "text/plain", AWS_TOKEN
    if h.headers.get("X-aws-ec2-metadata-token") != AWS_TOKEN:
        return 401, "text/plain", "Unauthorized"
    if h.path == "/latest/dynamic/instance-identity/document":
        doc = {
            "accountId": "123456789012",
            "architecture": "x86_64",
            "availabilityZone": "eu-central-1a",
            "imageId": "ami-0123456789abcdef0",
            "instanceId": "i-0123456789abcdef0",
            "instanceType": "m5.large",
            "pendingTime": "2026-01-01T00:00:00Z",
            "privateIp": "10.0.0.12",
            "region": "eu-central-1",
            "version": "2017-09-30",
        }
        return 200, "text/plain", json.dumps(doc, indent=2)
    if h.path == "/latest/meta-data/instance-type":
        return 200, "text/plain", "m5.large"
    return 404, "text/plain", "Not Found"


def _gcp(h):
    if h.headers.get("Metadata-Flavor") != "Google":
        return 403, "text/html", "Missing Metadata-Flavor:Google header."
    if h.path == "/computeMetadata/v1/instance/machine-type":
        return 200, "application/text", "projects/123456789012/machineTypes/e2-standard-4"
    if h.path == "/computeMetadata/v1/instance/zone":
        return 200, "application/text", "projects/123456789012/zones/europe-west1-b"
    return 404, "text/html", "not found"


def _azure(h):
    url = urlsplit(h.path)
    if h.headers.get("Metadata") != "true":
        return 400, "application/json", json.dumps({"error": "Bad request. Required metadata"})
    if "api-version" not in parse_qs(url.query):
        return 400, "application/json", json.dumps({"error": "Bad request. api-version"})
    if url.path == "/metadata/instance":
        doc = {
            "compute": {
                "azEnvironment": "AzurePublicCloud",
                "location": "westeurope",
                "name": "vm-test",
                "osType": "Linux",
                "vmSize": "Standard_D2s_v3",
                "zone": "1",
            },
            "network": {"interface": []},
        }
        return 200, "application/json; charset=utf-8", json.dumps(doc)
    return 404, "application/json", "{}"


def _hcloud(h):
    if h.path == "/hetzner/v1/metadata":
        text = (
            "availability-zone: fsn1-dc14\n"
            "hostname: my-server\n"
            "instance-id: 42424242\n"
            "local-ipv4: ''\n"
            "public-ipv4: 203.0.113.7\n"
            "region: eu-central\n"
        )
        return 200, "text/plain", text
    return 404, "text/plain", "not found"


def _upcloud(h):
    if h.path == "/metadata/v1.json":
        doc = {
            "cloud_name": "upcloud",
            "instance_id": "00d2a1b4-0c2b-4f5b-9a6b-0123456789ab",
            "hostname": "my-server",
            "platform": "servers",
            "region": "fi-hel1",
            "network": {"interfaces": []},
        }
        return 200, "application/json", json.dumps(doc)
    return 404, "text/plain", "not found"


def _alicloud(h):
    if h.command == "PUT" and h.path == "/latest/api/token":
        if "X-aliyun-ecs-metadata-token-ttl-seconds" not in h.headers:
            return 400, "text/plain", "missing ttl"
        return 200, "text/plain", ALI_TOKEN
    if h.headers.get("X-aliyun-ecs-metadata-token") != ALI_TOKEN:
        return 403, "text/plain", "Forbidden"  # hardened mode: token required
    if h.path == "/latest/meta-data/instance/instance-type":
        return 200, "text/plain", "ecs.g6.large"
    if h.path == "/latest/meta-data/region-id":
        return 200, "text/plain", "eu-central-1"
    return 404, "text/plain", "not found"


def _ovh(h):
    if h.path == "/latest/meta-data/instance-type":
        return 200, "text/plain", "b3-8"
    if h.path == "/openstack/latest/meta_data.json":
        doc = {
            "uuid": "1f0d4a8e-5f4a-4c5b-9d0e-0123456789ab",
            "hostname": "my-instance",
            "name": "my-instance",
            "availability_zone": "nova",
            "project_id": "0123456789abcdef0123456789abcdef",
            "launch_index": 0,
        }
        return 200, "application/json", json.dumps(doc)
    return 404, "text/plain", "not found"


PROTOCOLS = {
    "aws": _aws,
    "gcp": _gcp,
    "azure": _azure,
    "hcloud": _hcloud,
    "upcloud": _upcloud,
    "alicloud": _alicloud,
    "ovh": _ovh,
}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _answer(self):
        server = self.server
        server.requests.append((self.command, self.path, dict(self.headers)))
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        behaviour = server.behaviour
        if behaviour == "slow":
            time.sleep(server.delay)
        elif behaviour == "held":  # answers once the test lets it (or after `delay` s)
            server.holding.set()
            server.release.wait(server.delay)
        elif behaviour == "broken":
            self.close_connection = True
            self.connection.shutdown(2)
            return
        if behaviour == "garbage":
            status, ctype, body = 200, "application/octet-stream", server.garbage
        elif behaviour == "error":
            status, ctype, body = 500, "text/plain", "Internal Server Error"
        else:
            status, ctype, body = PROTOCOLS[server.vendor](self)
        data = body if isinstance(body, bytes) else body.encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        if server.vendor == "gcp":
            self.send_header("Metadata-Flavor", "Google")
        self.end_headers()
        try:
            self.wfile.write(data)
        except OSError:
            pass

    do_GET = do_PUT = do_POST = _answer


class MetadataServer(LoopbackHTTPServer):
    """A metadata service on 127.0.0.1 (ephemeral port) counting the connections it accepts."""

    def __init__(self, vendor="aws", behaviour="ok", delay=3.0, garbage=b"\x00\xff garbage"):
        super().__init__(_Handler)
        self.vendor = vendor
        self.behaviour = behaviour
        self.delay = delay
        self.garbage = garbage
        self.connections = 0
        self.requests = []
        self._lock = threading.Lock()
        self.holding = threading.Event()  # "held": a request arrived and waits for release
        self.release = threading.Event()

    def __exit__(self, *exc):
        self.release.set()  # a held answer goes out: its thread ends before the server does
        super().__exit__(*exc)

    def get_request(self):
        conn = super().get_request()
        with self._lock:
            self.connections += 1
        return conn
