"""A fake powercap tree (tests/core/test_core_energy.py, tests/export/test_export_energy.py):
laid out as the kernel's /sys/class/powercap, under a directory given as the sysfs root."""

from __future__ import annotations

import os

MAX_UJ = 262143328850  # max_energy_range_uj of a real package zone


class FakePowercap:
    """A powercap tree under root/class/powercap whose counters the test sets."""

    def __init__(self, root):
        self.root = str(root)
        self.dir = os.path.join(self.root, "class", "powercap")
        os.makedirs(self.dir, exist_ok=True)

    def zone(self, entry, name, uj=0, max_uj=MAX_UJ):
        """Adds a zone at once (built aside, renamed in: it appears whole)."""
        staging = os.path.join(self.root, "staging-" + entry)
        os.makedirs(staging)
        for file, text in (("name", name), ("energy_uj", uj), ("max_energy_range_uj", max_uj)):
            with open(os.path.join(staging, file), "w") as f:
                f.write(f"{text}\n")
        os.rename(staging, os.path.join(self.dir, entry))

    def set(self, entry, uj):
        path = os.path.join(self.dir, entry, "energy_uj")
        with open(path + ".tmp", "w") as f:
            f.write(f"{uj}\n")
        os.replace(path + ".tmp", path)
