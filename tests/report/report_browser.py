"""A real headless Chromium driven over the DevTools protocol (--remote-debugging-pipe), for
the report tests: load a page, collect console errors and network requests, evaluate
JavaScript, send real mouse input, take screenshots. Network off: every request goes to a
dead proxy on 127.0.0.1:9 and every host name fails to resolve."""

from __future__ import annotations

import base64
import json
import os
import shutil
import struct
import subprocess
import tempfile
import time
import zlib


def chromium_path():
    """The Chromium binary, or None."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def netns_prefix():
    """['unshare', '-n'] where this user may make an empty network namespace (root, or
    unprivileged user namespaces): Chromium then has no network at all, not even loopback
    routes out; [] elsewhere (the flags below still keep it off the network)."""
    global _NETNS
    if _NETNS is None:
        unshare = shutil.which("unshare")
        ok = False
        if unshare:
            for args in (["-n"], ["-rn"]):
                try:
                    ok = subprocess.run([unshare, *args, "true"], timeout=10).returncode == 0
                except (OSError, subprocess.SubprocessError):
                    ok = False
                if ok:
                    _NETNS = [unshare, *args]
                    break
        if not ok:
            _NETNS = []
    return _NETNS


_NETNS = None

NO_NETWORK_FLAGS = [
    "--proxy-server=127.0.0.1:9",
    "--proxy-bypass-list=<-loopback>",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-extensions",
]


def base_flags(profile):
    return [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        f"--user-data-dir={profile}",
        *NO_NETWORK_FLAGS,
    ]


class Browser:
    """One Chromium process with one page, spoken to over fds 3/4."""

    def __init__(self, width=1280, height=1800):
        binary = chromium_path()
        if binary is None:
            raise RuntimeError("chromium is not installed (make test installs it)")
        self.profile = tempfile.mkdtemp(prefix="rt-report-chromium-")
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        # move the child's ends above 10 so that dup2 onto 3 and 4 cannot clobber them
        hi_r = _dup_high(to_child_r)
        hi_w = _dup_high(from_child_w)
        os.close(to_child_r)
        os.close(from_child_w)

        def setup():
            os.dup2(hi_r, 3)
            os.dup2(hi_w, 4)

        self.proc = subprocess.Popen(
            [
                *netns_prefix(),
                binary,
                *base_flags(self.profile),
                "--remote-debugging-pipe",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=False,  # keeps the 3 and 4 made by setup(); Python's own fds are CLOEXEC
            preexec_fn=setup,
        )
        os.close(hi_r)
        os.close(hi_w)
        self.wfd = to_child_w
        self.rfd = from_child_r
        self.buf = b""
        self.next_id = 0
        self.events = []
        self.session = None
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")
        self._window_size(width, height)

    # -- protocol ------------------------------------------------------------------------

    def _send(self, method, params, session):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self.wfd, json.dumps(msg).encode() + b"\0")
        return self.next_id

    def _read(self, timeout):
        deadline = time.monotonic() + timeout
        import select

        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("chromium did not answer in time")
            ready, _, _ = select.select([self.rfd], [], [], left)
            if ready:
                chunk = os.read(self.rfd, 1 << 20)
                if not chunk:
                    raise RuntimeError("chromium closed the DevTools pipe")
                self.buf += chunk
        raw, self.buf = self.buf.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method, timeout=30, **params):
        """The result of one DevTools command (events that arrive meanwhile are kept)."""
        wanted = self._send(method, params, self.session)
        while True:
            msg = self._read(timeout)
            if msg.get("id") == wanted:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def browser_call(self, method, timeout=30, **params):
        """The result of one DevTools command to the browser itself (not the page)."""
        session, self.session = self.session, None
        try:
            return self.call(method, timeout=timeout, **params)
        finally:
            self.session = session

    def pump(self, seconds):
        """Collects events for a while."""
        end = time.monotonic() + seconds
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return
            try:
                self.events.append(self._read(left))
            except TimeoutError:
                return

    def eval(self, expression):
        """The value of a JavaScript expression (JSON-able)."""
        res = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in res:
            raise RuntimeError(f"page script failed: {res['exceptionDetails']}")
        return res["result"].get("value")

    # -- high level ----------------------------------------------------------------------

    def load(self, url, ready_js, timeout=30):
        """Navigates to url and waits until ready_js is truthy; returns seconds taken."""
        start = time.monotonic()
        self.call("Page.navigate", url=url)
        while time.monotonic() - start < timeout:
            try:
                if self.eval(ready_js):
                    return time.monotonic() - start
            except RuntimeError:
                pass
            self.pump(0.02)
        raise TimeoutError(f"page not ready after {timeout} s: {url}")

    def viewport(self, width, height=800, dark=False, media=""):
        """Sets the window size and the emulated media: prefers-color-scheme dark or light,
        and 'print' or screen."""
        self._window_size(width, height)
        scheme = "dark" if dark else "light"
        self.call(
            "Emulation.setEmulatedMedia",
            media=media,
            features=[{"name": "prefers-color-scheme", "value": scheme}],
        )

    def resized(self, width, height, timeout=60):
        """Resizes the window and returns once the page has handled every resize event it
        got: a resize listener added after the page's own (re)arms, at each event, a timer
        longer than the page's 100 ms redraw timer and set after it, so it fires after it
        (the page's clock, not a guess of the test's)."""
        self.eval(
            """(function () {
  if (window.rtProbe) { return true; }
  var t = null;
  window.rtProbe = true;
  window.addEventListener('resize', function () {
    clearTimeout(t);
    window.rtSettled = false;
    t = setTimeout(function () { window.rtSettled = true; }, 250);
  });
  return true; })()"""
        )
        self.eval("window.rtSettled = false")
        self._window_size(width, height)
        deadline = time.monotonic() + timeout
        while not self.eval("window.rtSettled"):
            if time.monotonic() > deadline:
                raise TimeoutError(f"no resize event handled in {timeout} s")
            self.pump(0.02)

    def _window_size(self, width, height):
        """Sets the size of the emulated window (CSS pixels, scale 1, not a phone)."""
        self.call(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    def mouse(self, kind, x, y, buttons=0, button="none", click_count=0):
        self.call(
            "Input.dispatchMouseEvent",
            type=kind,
            x=x,
            y=y,
            button=button,
            buttons=buttons,
            clickCount=click_count,
        )

    def console_errors(self):
        """Console errors, uncaught exceptions and error log entries seen so far."""
        out = []
        for ev in self.events:
            m, p = ev.get("method"), ev.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append(json.dumps(p.get("args")))
            elif m == "Runtime.exceptionThrown":
                out.append(json.dumps(p.get("exceptionDetails")))
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append(p["entry"].get("text", ""))
        return out

    def requests(self):
        """URLs of every request the page made (the page's own file:// URL included)."""
        return [
            ev["params"]["request"]["url"]
            for ev in self.events
            if ev.get("method") == "Network.requestWillBeSent"
        ]

    def screenshot(self, path=None, clip=None):
        """PNG bytes of the page (or of clip {x, y, width, height}); also saved to path."""
        params = {"format": "png", "captureBeyondViewport": True}
        if clip:
            params["clip"] = dict(clip, scale=1)
        png = base64.b64decode(self.call("Page.captureScreenshot", **params)["data"])
        if path:
            with open(path, "wb") as f:
                f.write(png)
        return png

    def settled_screenshot(self, clip, tries=10):
        """PNG bytes of clip once two screenshots in a row are the same: a page that is still
        painting (a redraw after a click, tiles rasterized late on a loaded machine) is not
        measured half-drawn. After `tries` screenshots, the last one."""
        last = self.screenshot(clip=clip)
        for _ in range(tries - 1):
            self.pump(0.02)
            png = self.screenshot(clip=clip)
            if png == last:
                break
            last = png
        return last

    def close(self):
        try:
            self._send("Browser.close", {}, None)
            self.proc.wait(10)
        except Exception:
            self.proc.kill()
            self.proc.wait()
        for fd in (self.wfd, self.rfd):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def artifacts_dir(tmp_path_factory, name):
    """Where a test keeps its screenshots and PDFs (made): $RESOURCE_TRACKER_TEST_ARTIFACTS/name
    (CI can keep them), else a fresh temporary directory (never the working tree)."""
    kept = os.environ.get("RESOURCE_TRACKER_TEST_ARTIFACTS")
    path = os.path.join(kept, name) if kept else str(tmp_path_factory.mktemp(name))
    os.makedirs(path, exist_ok=True)
    return path


def _dup_high(fd):
    import fcntl

    return fcntl.fcntl(fd, fcntl.F_DUPFD, 11)


def dump_dom(path, timeout=60):
    """(DOM after scripts ran, seconds) from `chromium --headless --dump-dom` of a file."""
    profile = tempfile.mkdtemp(prefix="rt-report-dump-")
    try:
        start = time.monotonic()
        out = subprocess.run(
            [
                *netns_prefix(),
                chromium_path(),
                *base_flags(profile),
                "--dump-dom",
                f"file://{os.path.abspath(path)}",
            ],
            capture_output=True,
            timeout=timeout,
        )
        return out.stdout.decode("utf-8", "replace"), time.monotonic() - start
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def png_colors(png):
    """The number of distinct RGB(A) colours in a PNG (8-bit RGB/RGBA, non-interlaced)."""
    return len(set(png_pixels(png)))


def png_pixels(png):
    """Every pixel of a PNG (8-bit RGB/RGBA, non-interlaced) as bytes (R, G, B[, A])."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    width = height = channels = None
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        kind = png[pos + 4 : pos + 8]
        body = png[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color, _c, _f, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and color in (2, 6) and interlace == 0, "unsupported PNG"
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    prev = bytearray(stride)
    pixels = []
    i = 0
    for _ in range(height):
        ftype = raw[i]
        line = bytearray(raw[i + 1 : i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - channels] if x >= channels else 0
            b = prev[x]
            c = prev[x - channels] if x >= channels else 0
            if ftype == 1:
                line[x] = (line[x] + a) & 255
            elif ftype == 2:
                line[x] = (line[x] + b) & 255
            elif ftype == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[x] = (line[x] + pred) & 255
        pixels.extend(bytes(line[x : x + channels]) for x in range(0, stride, channels))
        prev = line
    return pixels
