"""The data-quality line of a run's GPU figures: which libraries were read, and where the
process's figures are the GPUs' own (the library cannot tell which process uses a GPU).

NVIDIA's GPUs are read through NVML, AMD's through amdsmi, else ROCm SMI (docs/metrics.md,
"GPU"). NVML and amdsmi list each GPU's processes: the tracked tree's share is theirs. ROCm SMI
lists the machine's GPU processes and their GPUs but not their time (a GPU the tree shares
cannot be split), and amdsmi may refuse its process list (a container, an old driver): the
tree's figures are then the GPU's, an over-estimate when other processes share it.
"""

from __future__ import annotations

from typing import Any, Optional

from . import settings

__all__ = ["gpu_note"]

#: the AMD libraries' names in the note
_AMD_NAMES = {"amdsmi": "amdsmi", "rocm_smi": "ROCm SMI"}


def gpu_note(sampler: Any) -> Optional[str]:
    """The line, None when nothing is missing (or the backend reads no GPU library)."""
    if not hasattr(sampler, "gpu_sources"):
        return None
    sources = sampler.gpu_sources()
    if not sources.get("tried"):
        return None
    if not sources.get("nvidia") and not sources.get("amd"):
        return (
            "no GPU read: no NVML (NVIDIA) nor amdsmi / ROCm SMI (AMD) library could be "
            "loaded, or they found no GPU, so the GPU columns are zeros; if a library is "
            "installed elsewhere, set " + _library_settings()
        )
    machine_wide = int(getattr(sampler, "gpu_machine_wide", 0) or 0)
    if not machine_wide:
        return None
    library = _AMD_NAMES.get(str(sources.get("amd_library")), "AMD's library")
    why = (
        "ROCm SMI does not split a GPU's time between the processes sharing it (amdsmi does), "
        "or its process list was refused"
        if sources.get("amd_library") == "rocm_smi"
        else "its process list was refused (a container, an old driver)"
    )
    return (
        f"the process's GPU figures of {machine_wide} readings of AMD GPUs are the GPUs' own, "
        f"machine-wide: {library} could not tell the process's share ({why}), so other "
        "processes on those GPUs count as this one's"
    )


def _library_settings() -> str:
    """The settings that name the libraries, with their values when set."""
    names = ("RESOURCE_TRACKER_NVML_LIBRARY", "RESOURCE_TRACKER_AMD_SMI_LIBRARY")
    given = [f"{name} (now {settings.get(name)!r})" for name in names if settings.get(name)]
    return " or ".join(given) if given else " or ".join(names)
