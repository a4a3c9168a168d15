"""The stand-in NVML library, its control file and a workload to track, for every GPU test
here (defined once, in test_gpu_nvml.py)."""

from test_gpu_nvml import control, nvml_stub, stub_dir, workload  # noqa: F401
