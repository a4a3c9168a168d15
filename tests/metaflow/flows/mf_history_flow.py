"""Test flow: a short tracked step run several times (history), and one with history off."""

import time

from metaflow import FlowSpec, step, track_resources


class HistoryFlow(FlowSpec):
    @track_resources(interval=0.2, create_card=False)
    @step
    def start(self):
        time.sleep(0.5)
        self.next(self.no_history)

    @track_resources(interval=0.2, create_card=False, history=False)
    @step
    def no_history(self):
        time.sleep(0.3)
        self.next(self.end)

    @step
    def end(self):
        pass


if __name__ == "__main__":
    HistoryFlow()
