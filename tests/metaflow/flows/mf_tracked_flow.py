"""Test flow: @track_resources next to @card, @resources, @retry, @catch and a foreach."""

import os
import time

from metaflow import (
    Config,
    FlowSpec,
    card,
    catch,
    current,
    resources,
    retry,
    step,
    track_resources,
)
from metaflow.cards import Markdown


class TrackedFlow(FlowSpec):
    # with a Config, @card passes a config file to its render subprocesses (shared by all cards)
    cfg = Config("cfg", default_value={"greeting": "hello from config"})

    # our decorator above the user's @card: Metaflow sees the user's card first
    @track_resources(interval=0.2)
    @card(type="blank", id="mine")
    @step
    def start(self):
        current.card["mine"].append(Markdown("# user card above"))
        current.card["mine"].append(Markdown(self.cfg.greeting))
        current.card.append(Markdown("appended to the default editable card"))
        self.next(self.big_memory)

    @track_resources(interval=0.2)
    @resources(memory=1024, cpu=1)
    @step
    def big_memory(self):
        data = bytearray(64 * 1024 * 1024)
        time.sleep(0.8)
        del data
        self.next(self.fan_out)

    # the user's @card above ours
    @card(type="blank")
    @track_resources(interval=0.2)
    @step
    def fan_out(self):
        current.card.append(Markdown("# user card below"))
        self.items = [1, 2, 3]
        self.next(self.each, foreach="items")

    @track_resources(interval=0.2)
    @step
    def each(self):
        self.value = self.input * 2
        time.sleep(0.3)
        self.next(self.join)

    @track_resources(interval=0.2, create_card=False)
    @step
    def join(self, inputs):
        self.total = sum(i.value for i in inputs)
        self.next(self.flaky)

    @retry(times=1, minutes_between_retries=0)
    @track_resources(interval=0.2)
    @step
    def flaky(self):
        if current.retry_count == 0:
            raise RuntimeError("first attempt fails")
        self.next(self.caught)

    @catch(var="caught_error")
    @track_resources(interval=0.2)
    @step
    def caught(self):
        raise ValueError("handled by @catch")
        self.next(self.end)

    @track_resources(interval=0.2, artifact_name="rt_end")
    @step
    def end(self):
        self.pid = os.getpid()


if __name__ == "__main__":
    TrackedFlow()
