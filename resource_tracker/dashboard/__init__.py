"""``resource-tracker dashboard``: one self-contained page over many runs of many steps
(docs/dashboard.md). The run record every source returns is :class:`RunRecord`."""

from ._model import Loaded, RunRecord

__all__ = ["RunRecord", "Loaded"]
