"""The flow of the docs page: one tracked step holding a 500 MB bytearray for 3 seconds.

Run with ``python resource_tracking_flow.py run``; then read the data with
``Flow("ResourceTrackingFlow").latest_run["my_sleeping_data"].task.data.resource_tracker_data``
and view the card with ``python resource_tracking_flow.py card view my_sleeping_data``.
"""

from time import sleep

from metaflow import FlowSpec, step, track_resources


class ResourceTrackingFlow(FlowSpec):
    @step
    def start(self):
        print("Starting step")
        self.next(self.my_sleeping_data)

    @track_resources
    @step
    def my_sleeping_data(self):
        data = bytearray(500 * 1024 * 1024)  # 500MB
        sleep(3)
        del data
        self.next(self.end)

    @step
    def end(self):
        print("Step finished")


if __name__ == "__main__":
    ResourceTrackingFlow()
