"""Test flow for the Pushgateway export of a retried step: ``train`` (``@retry(times=1)``,
``@track_resources(export="pushgateway")``) holds 60 MiB; its first attempt waits until its
live gauges reached the Pushgateway (RESOURCE_TRACKER_PUSHGATEWAY_URL, set by the test) and
is then killed by SIGKILL (as a scheduler or the kernel kills a task); the second attempt
goes through."""

import json
import os
import signal
import time
import urllib.request

from metaflow import FlowSpec, current, retry, step, track_resources


def _live_gauges_pushed(attempt):
    """The Pushgateway holds this task's live group of the given attempt."""
    url = os.environ["RESOURCE_TRACKER_PUSHGATEWAY_URL"] + "/api/v1/metrics"
    with urllib.request.urlopen(url, timeout=10) as answer:
        groups = json.load(answer)["data"]
    return any(
        g["labels"].get("task_id") == str(current.task_id)
        and g["labels"].get("attempt") == attempt
        and "resource_tracker_export_period_seconds" in g
        for g in groups
    )


class RetryExportFlow(FlowSpec):
    @step
    def start(self):
        self.next(self.train)

    @retry(times=1, minutes_between_retries=0)
    @track_resources(interval=0.1, export="pushgateway", create_card=False, history=False)
    @step
    def train(self):
        ballast = bytearray(60 * 1024 * 1024)
        for i in range(0, len(ballast), 4096):
            ballast[i] = 1
        if current.retry_count == 0:
            deadline = time.monotonic() + 120
            while not _live_gauges_pushed("0"):
                assert time.monotonic() < deadline, "no live push of attempt 0"
                time.sleep(0.1)
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(1.0)
        self.next(self.end)

    @step
    def end(self):
        pass


if __name__ == "__main__":
    RetryExportFlow()
