"""An HTTP server on 127.0.0.1 (an ephemeral port), serving from a thread inside a ``with``
block: the base of the tests' stand-ins for outside services (cloud metadata, the Keeper API),
so that nothing a test sends leaves the machine. Shared by every test directory (tests/ is on
sys.path through tests/conftest.py)."""

from __future__ import annotations

import select
import threading
import time
from http.server import ThreadingHTTPServer


class LoopbackHTTPServer(ThreadingHTTPServer):
    """Serves `handler` on 127.0.0.1 while in a ``with`` block; `url` is its base address."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, handler):
        super().__init__(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(target=self.serve_forever, args=(0.02,), daemon=True)
        self._handlers = []
        self._handlers_lock = threading.Lock()
        self._accepted = 0  # connections being accepted, their thread not started yet

    def _handle_request_noblock(self):
        """One ready connection accepted and handed to its thread: counted from before the
        accept (while it is still in the listening queue, where settle's select sees it) until
        its thread started, so settle never looks in between."""
        with self._handlers_lock:
            self._accepted += 1
        try:
            super()._handle_request_noblock()
        finally:
            with self._handlers_lock:
                self._accepted -= 1

    def process_request(self, request, client_address):
        """Serves one connection in a thread of its own, kept until :meth:`settle` joins it
        (started before settle can see it: a thread not started cannot be joined)."""
        thread = threading.Thread(
            target=self.process_request_thread, args=(request, client_address), daemon=True
        )
        with self._handlers_lock:
            self._handlers = [t for t in self._handlers if t.is_alive()] + [thread]
            thread.start()

    def settle(self, timeout=60.0):
        """Returns once the threads serving the connections made so far have ended (their
        sockets closed): a client that got its answers sees the server at rest, however
        slowly a busy machine runs the handlers' last steps. A connection the client made and
        left (one of parallel probes) may wait in the listening queue after the client
        returned: it is waited for too, until accepted and served."""
        deadline = time.monotonic() + timeout
        while True:
            with self._handlers_lock:
                handlers, self._handlers = self._handlers, []
                pending = self._accepted > 0 or select.select([self], [], [], 0)[0]
            for thread in handlers:
                thread.join(max(0.0, deadline - time.monotonic()))
            if not pending or time.monotonic() > deadline:
                return
            time.sleep(0.005)  # the serving thread accepts it within its 0.02 s poll

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}"

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.shutdown()
        self.server_close()
