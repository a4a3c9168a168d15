"""Test flow for OTLP export from Metaflow: ``train`` is tracked without an export
attribute, so RESOURCE_TRACKER_EXPORT (set by the test to ``otlp``) decides."""

from metaflow import FlowSpec, step, track_resources


class OtlpFlow(FlowSpec):
    @step
    def start(self):
        self.next(self.train)

    @track_resources(interval=0.2, create_card=False, history=False)
    @step
    def train(self):
        ballast = bytearray(32 * 1024 * 1024)
        for i in range(0, len(ballast), 4096):
            ballast[i] = 1
        self.next(self.end)

    @step
    def end(self):
        pass


if __name__ == "__main__":
    OtlpFlow()
