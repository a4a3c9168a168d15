"""Bounded HTTP for the export targets: whatever an endpoint answers, a send costs the job a
few KiB and ends by its deadline.

- One request at a time on a fresh connection, closed after the answer: no pooled socket
  outlives a send.
- The whole request (connect, send, status line, headers, what is read of the body) ends by
  one deadline: every read on the socket waits at most the time left, so an endpoint that
  drips a byte a second cannot stretch it.
- Of the body, at most :data:`BODY_BYTES` are read (a failure's message), never the rest:
  a huge or endless (chunked) body costs nothing. :meth:`Sender.fetch` (a GET whose answer
  is wanted: the dashboard's Prometheus source) reads at most the bound it is given and
  fails past it. http.client caps the status line and each
  header at 64 KiB and their number at 100.
- Only 2xx is sent; a redirect (3xx) is a failure naming where it pointed (the address to
  configure), never followed.
- :meth:`Sender.abort` (from any thread) ends the send under way at once and every later
  one: ``stop()`` leaves no sender thread or socket behind.
- ``http_proxy`` / ``https_proxy`` / ``no_proxy`` apply as in urllib.
"""

from __future__ import annotations

import functools
import http.client
import io
import socket
import ssl
import threading
import time
import urllib.parse
import urllib.request
from typing import TYPE_CHECKING, Any, Dict, Optional, Tuple

from .._text import printable

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

#: what is read of an answer's body at most (for a failure's message)
BODY_BYTES = 1024


class SendError(ConnectionError):
    """The endpoint did not accept the request (the message says why)."""


def check_url(text: str, source: str, example: str) -> str:
    """``text`` when it is an http(s) URL with a host and a valid port, else ValueError naming
    ``source`` (the variable or argument), what is wrong and an ``example`` to follow."""
    fix = f"set {source} to an http:// or https:// address, e.g. {example}"
    try:
        parts = urllib.parse.urlsplit(text)
        port = parts.port
    except ValueError:  # a port that is not a number or out of 0-65535 (or a bad IPv6 host)
        raise ValueError(
            f"{source}={text!r} has an invalid port or host (a port is 1 to 65535): {fix}"
        ) from None
    if parts.scheme.lower() not in ("http", "https"):
        scheme = parts.scheme or "no"
        raise ValueError(f"{source}={text!r} has {scheme!r} as scheme, not http(s): {fix}")
    if not parts.hostname:
        raise ValueError(f"{source}={text!r} names no host: {fix}")
    if port == 0:
        raise ValueError(f"{source}={text!r} has port 0 (a port is 1 to 65535): {fix}")
    return text


class _DeadlineReader(io.RawIOBase):
    """The socket's bytes, each read waiting at most until the deadline. It reads through
    the socket's own unbuffered ``makefile()``, which holds the socket open until this is
    closed: the body of an answer that ends the connection can still be read."""

    def __init__(self, sock: socket.socket, deadline: float, aborted: threading.Event):
        super().__init__()
        self._sock = sock
        self._raw = sock.makefile("rb", buffering=0)
        self._deadline = deadline
        self._aborted = aborted

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int:
        left = self._deadline - time.monotonic()
        if self._aborted.is_set():
            raise SendError("the export was stopped")
        if left <= 0:
            raise socket.timeout("the endpoint did not answer within the send timeout")
        self._sock.settimeout(left)
        return self._raw.readinto(buffer) or 0

    def close(self) -> None:
        self._raw.close()
        super().close()


class _Response(http.client.HTTPResponse):
    """http.client's response parser over a :class:`_DeadlineReader`."""

    def __init__(
        self,
        sock: socket.socket,
        *args: Any,
        deadline: float,
        aborted: threading.Event,
        **kwargs: Any,
    ):
        super().__init__(sock, *args, **kwargs)
        self.fp.close()
        self.fp = io.BufferedReader(_DeadlineReader(sock, deadline, aborted))


def _target(url: str) -> Tuple[str, str, int, str, Optional[Tuple[str, int]]]:
    """(scheme, host, port, request target, proxy (host, port) or None) of url."""
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    host = parts.hostname or ""
    port = parts.port or (443 if scheme == "https" else 80)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    proxy_url = urllib.request.getproxies().get(scheme)
    if not proxy_url or urllib.request.proxy_bypass(host):
        return scheme, host, port, path, None
    proxy = urllib.parse.urlsplit(proxy_url if "//" in proxy_url else "http://" + proxy_url)
    through = (proxy.hostname or "", proxy.port or 80)
    return scheme, host, port, path if scheme == "https" else url, through


class Sender:
    """Sends requests one at a time (see the module docstring); ``context``: the TLS
    context of https endpoints (None: the system's default)."""

    def __init__(self, context: Optional[ssl.SSLContext] = None):
        self.context = context
        self._aborted = threading.Event()
        self._lock = threading.Lock()
        self._conn: Optional[http.client.HTTPConnection] = None

    def request(
        self, method: str, url: str, body: bytes, headers: Dict[str, str], timeout: float
    ) -> int:
        """Sends; the 2xx status, or SendError / OSError (the deadline: ``timeout`` s)."""
        return self._exchange(method, url, body, headers, timeout, 0)[0]

    def fetch(
        self, url: str, timeout: float, max_bytes: int, headers: Optional[Dict[str, str]] = None
    ) -> bytes:
        """GET url: the body of a 2xx answer, at most ``max_bytes`` of it (SendError naming
        the bound when it is longer), read by the same deadline (``timeout`` s); SendError
        / OSError as :meth:`request`."""
        return self._exchange("GET", url, None, headers or {}, timeout, max_bytes)[1]

    def _exchange(
        self,
        method: str,
        url: str,
        body: Optional[bytes],
        headers: Dict[str, str],
        timeout: float,
        max_bytes: int,
    ) -> Tuple[int, bytes]:
        """(status, at most max_bytes of the body) of one request (see the module)."""
        deadline = time.monotonic() + max(0.001, timeout)
        conn, path = self._open(url, timeout, deadline)
        response = None
        try:
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            status = response.status
            if not 200 <= status < 300:
                raise SendError(_refusal(status, response))
            data = response.read(max_bytes + 1) if max_bytes else b""
            if len(data) > max_bytes:
                raise SendError(
                    f"the answer is longer than {max_bytes:,} bytes (the bound): ask for less"
                )
            return status, data
        finally:
            with self._lock:  # closed under the lock: abort() never shuts a reused descriptor
                self._conn = None
                conn.close()
                if response is not None:
                    response.close()

    def _open(
        self, url: str, timeout: float, deadline: float
    ) -> Tuple[http.client.HTTPConnection, str]:
        scheme, host, port, path, proxy = _target(url)
        where = proxy or (host, port)
        if scheme == "https":
            context = self.context or ssl.create_default_context()
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                *where, timeout=timeout, context=context
            )
        else:
            conn = http.client.HTTPConnection(*where, timeout=timeout)
        if proxy and scheme == "https":
            conn.set_tunnel(host, port)
        conn.response_class = functools.partial(  # type: ignore[assignment]
            _Response, deadline=deadline, aborted=self._aborted
        )
        with self._lock:
            if self._aborted.is_set():
                raise SendError("the export was stopped")
            self._conn = conn
        return conn, path

    def abort(self) -> None:
        """Ends the request under way (its socket shut down) and refuses later ones."""
        with self._lock:
            self._aborted.set()
            sock = self._conn.sock if self._conn is not None else None
            if sock is not None:
                try:
                    socket.socket.shutdown(sock, socket.SHUT_RDWR)
                except OSError:
                    pass


def _refusal(status: int, response: http.client.HTTPResponse) -> str:
    """Why a non-2xx answer is a failure, with what to do about a redirect."""
    if 300 <= status < 400:
        where = printable(response.getheader("Location") or "nowhere", 300)
        return (
            f"HTTP {status}: the endpoint redirects to {where}; redirects are not followed: "
            f"configure the address that answers"
        )
    try:
        detail = printable(response.read(BODY_BYTES).decode("utf-8", "replace"), 200)
    except (OSError, http.client.HTTPException):
        detail = ""
    reason = printable(response.reason or "", 100)
    return f"HTTP {status} {reason}" + (f": {detail}" if detail else "")
