"""The data-quality line of a run's GPU figures: which libraries were read, and where the
process's figures are the GPUs' own (the library cannot tell which process uses a GPU).

NVIDIA's GPUs are read through NVML, AMD's through amdsmi, else ROCm SMI (docs/metrics.md,
"GPU"). NVML and amdsmi list each GPU's processes: the tracked tree's share is theirs. ROCm SMI
lists the machine's GPU processes and their GPUs but not their time (a GPU the tree shares
cannot be split), and amdsmi may refuse its process list (a container, an old driver): the
tree's figures are then the GPU's, an over-estimate when other processes share it.

A machine without a GPU (most) gets no line: "no GPU read" is said only where a GPU was to
be read, that is where a library is named by a setting or the PCI bus shows an NVIDIA or AMD
display or compute device (``/sys/bus/pci/devices/*/class`` and ``vendor``).
"""

from __future__ import annotations

import glob
import os
from typing import Any, Optional

from . import _core, settings

__all__ = ["gpu_note"]

#: the AMD libraries' names in the note
_AMD_NAMES = {"amdsmi": "amdsmi", "rocm_smi": "ROCm SMI"}
#: the settings that name the GPU libraries
_LIBRARY_SETTINGS = ("RESOURCE_TRACKER_NVML_LIBRARY", "RESOURCE_TRACKER_AMD_SMI_LIBRARY")
#: PCI vendor ids of the GPUs read (NVIDIA, AMD) and the PCI base class of display
#: controllers (VGA, 3D; AMD Instinct and NVIDIA data-centre GPUs are "3D controllers")
_GPU_VENDORS = (b"0x10de", b"0x1002")
_DISPLAY_CLASS = b"0x03"
#: at most this many PCI devices are looked at (a machine has tens)
_MAX_PCI_DEVICES = 512


def gpu_note(sampler: Any) -> Optional[str]:
    """The line, None when nothing is missing (or the backend reads no GPU library)."""
    if not hasattr(sampler, "gpu_sources"):
        return None
    sources = sampler.gpu_sources()
    if not sources.get("tried"):
        return None
    if not sources.get("nvidia") and not sources.get("amd"):
        if not _gpu_expected():
            return None
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


def _gpu_expected() -> bool:
    """Whether this machine has a GPU to read: a library named by a setting, or an NVIDIA or
    AMD display controller on the PCI bus (under RESOURCE_TRACKER_SYSFS_ROOT)."""
    if any(settings.get(name) for name in _LIBRARY_SETTINGS):
        return True
    root = settings.get("RESOURCE_TRACKER_SYSFS_ROOT") or "/sys"
    devices = sorted(glob.glob(os.path.join(root, "bus", "pci", "devices", "*")))
    return any(_is_gpu(device) for device in devices[:_MAX_PCI_DEVICES])


def _is_gpu(device: str) -> bool:
    """Whether a PCI device's folder is an NVIDIA or AMD display controller."""
    vendor = _core.read_regular_file(os.path.join(device, "vendor"), 64)
    kind = _core.read_regular_file(os.path.join(device, "class"), 64)
    if vendor is None or kind is None:
        return False
    return vendor.strip() in _GPU_VENDORS and kind.strip().startswith(_DISPLAY_CLASS)


def _library_settings() -> str:
    """The settings that name the libraries, with their values when set."""
    names = _LIBRARY_SETTINGS
    given = [f"{name} (now {settings.get(name)!r})" for name in names if settings.get(name)]
    return " or ".join(given) if given else " or ".join(names)
