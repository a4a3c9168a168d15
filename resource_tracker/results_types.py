"""The types of what a tracker's results are: ``ResourceTracker.stats()`` (:class:`RunStats`),
``recommend_resources()`` (:class:`Resources`) and ``recommend_server()``
(:class:`ServerRecord`, or a list of them with ``n``).

For your own annotations::

    from resource_tracker.results_types import Resources, RunStats

    def peak_mib(stats: RunStats) -> float:
        return stats["process_memory"]["max"] / 1024

They are ``TypedDict`` classes: at run time the results are plain dicts (``stats()`` a dict
subclass whose missing 0.5 keys name their replacement). A key that is not always there
(a table switched off, no cgroup, no export, the psutil backend) is in a ``total=False``
class. The documents' tables of these keys (docs/resource_tracker.md, docs/catalog.md) are
checked against these classes by the tests, and so is a real run's result.

Imports nothing of the package (a foundation module), and is not imported with it: the
package itself reads these names for its annotations only.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, TypedDict

# Optional[...], not X | None: the class bodies below are read at run time on 3.9 too.


# -- stats() -------------------------------------------------------------------------------


class Distribution(TypedDict):
    """A sampled column's summary: the time-weighted mean, the largest value and the
    percentiles (linear interpolation), in the column's unit."""

    mean: float
    max: float
    p50: float
    p90: float
    p99: float


class Peak(TypedDict):
    """The largest value of a column (or the kernel's high-water mark)."""

    max: float


class Total(TypedDict):
    """The sum of a counter column over the run (bytes)."""

    sum: float


class Timing(TypedDict):
    """``stats()["timestamp"]``: seconds from start to stop (or to the last row), rows."""

    duration: float
    samples: int


class _DataQualityBase(TypedDict):
    samples_dropped: int
    incomplete_columns: Dict[str, str]  # stats key -> why it is incomplete


class DataQuality(_DataQualityBase, total=False):
    """``stats()["data_quality"]`` and ``data_quality()``: what is missing, and why."""

    read_in_caller: str  # stop() could make no thread: the cgroup was read in its caller
    read_errors: int  # procfs reads that failed
    descriptors_replaced: int  # kept-open files the program closed or replaced: re-opened
    errors: List[str]  # why nothing is recommended from this run
    process_visible: bool  # False: the tracked process was never seen (only then present)
    code_profile: str  # what the code profile missed
    energy: str  # what the energy figures miss (no powercap, unreadable, GPU power integrated)
    gpu: str  # a GPU on the bus but none read; process figures that are the GPUs' (ROCm SMI)


class _EnergyBase(TypedDict):
    joules: Optional[float]
    kwh: Optional[float]
    cpu_joules: Optional[float]
    dram_joules: Optional[float]
    gpu_joules: Optional[float]
    process_joules: Optional[float]
    process_kwh: Optional[float]
    process_estimate: str


class Energy(_EnergyBase, total=False):
    """``stats()["energy"]``: the run's energy (docs/metrics.md, "GPU power and energy").

    ``joules``/``kwh``: the machine's (CPU packages + DRAM from powercap, GPUs from NVML or
    amdsmi);
    ``process_joules``/``process_kwh``: the process's share, an estimate (its share of the
    CPU time and of the GPU usage, said in ``process_estimate``). ``None``: not measured.
    Only when a grid intensity is given (``RESOURCE_TRACKER_GRID_INTENSITY``): ``co2e_g``
    and ``process_co2e_g`` (grams CO2e: the kWh times the intensity), ``grid_intensity``
    (gCO2e/kWh) and ``grid_source`` (where the intensity came from, in words)."""

    co2e_g: Optional[float]
    process_co2e_g: Optional[float]
    grid_intensity: float
    grid_source: str


class GpuFit(TypedDict):
    """``stats()["gpu_fit"]``: what the run's GPUs really needed (docs/metrics.md, "GPU
    right-sizing"): GPUs held, busy and held unused; the indexes of the busy GPUs and of
    the idle ones holding memory; the peak used memory of the fullest busy GPU (MiB) and the
    largest memory of a busy GPU (MiB); the source in words."""

    gpus_held: int
    gpus_busy: int
    gpus_unused: int
    busy: List[int]
    idle: List[int]
    vram_per_gpu_mib: float
    gpu_memory_mib: float
    source: str


class CgroupFigures(TypedDict):
    """``stats()["cgroup"]`` and ``cgroup_metrics``: the tracked process's cgroup during
    the run (docs/metrics.md, "The container (cgroup)"); a figure not read is None."""

    version: int
    path: str
    memory_mib: Optional[float]
    memory_peak_mib: Optional[float]
    memory_limit_mib: Optional[float]
    cpu_limit_cores: Optional[float]
    cpu_seconds: Optional[float]
    cpu_periods: Optional[int]
    cpu_throttled_periods: Optional[int]
    cpu_throttled_seconds: Optional[float]
    oom_kills: Optional[int]
    dedicated: bool


class TreeSourceColumns(TypedDict):
    """Where each of the tree's columns came from: 'cgroup' or 'procfs'."""

    cpu: str
    memory: str
    io: str


class TreeSource(TypedDict):
    """``stats()["tree_source"]`` and ``tree_source`` (C sampler only; docs/metrics.md,
    "The tree from its own cgroup")."""

    source: str  # 'cgroup', 'procfs' or 'mixed'
    columns: TreeSourceColumns
    note: Optional[str]
    cgroup_readings: int
    cgroup_reads: int
    walks: int


class ExportTarget(TypedDict):
    """What the export did for one target (docs/export.md)."""

    sent: int
    failures: int
    dropped_points: int
    dropped_rows: int
    last_error: Optional[str]
    final: str


class _ExportReportBase(TypedDict):
    targets: Dict[str, ExportTarget]
    rows_dropped: int


class ExportReport(_ExportReportBase, total=False):
    """``stats()["export"]`` and ``export_report()``."""

    error: Optional[str]


class _RunStatsBase(TypedDict):
    timestamp: Timing
    data_quality: DataQuality


class RunStats(_RunStatsBase, total=False):
    """What ``ResourceTracker.stats()`` returns (docs/resource_tracker.md, ``stats()``).

    The ``process_*`` keys are there when processes are tracked, the ``system_*`` keys
    when the system is; units are the columns' (memory KiB, VRAM MiB, disk GB, bytes,
    cores)."""

    process_children: Peak
    process_cpu_usage: Distribution
    process_memory: Distribution
    process_read_bytes: Total
    process_write_bytes: Total
    process_gpu_usage: Distribution
    process_gpu_vram: Distribution
    process_gpu_utilized: Distribution
    process_cpu_wait: Distribution  # cores of the tree waiting for a CPU (run queue)
    system_cpu_usage: Distribution
    system_memory_used: Distribution
    system_disk_read_bytes: Total
    system_disk_write_bytes: Total
    system_disk_space_used_gb: Peak
    system_net_recv_bytes: Total
    system_net_sent_bytes: Total
    system_gpu_usage: Distribution
    system_gpu_vram: Distribution
    system_gpu_utilized: Distribution
    system_cpu_energy_j: Total  # J, CPU packages (powercap)
    system_dram_energy_j: Total  # J, DRAM (powercap)
    system_gpu_energy_j: Total  # J, all GPUs
    energy: Energy  # the run's energy, J and kWh
    gpu_fit: GpuFit  # the GPUs the run kept busy and their peak memory, where told
    process_memory_hwm: Peak  # KiB; the C sampler, processes tracked
    cgroup: CgroupFigures  # when the process is in a cgroup
    tree_source: TreeSource  # the C sampler
    export: ExportReport  # with an export


# -- recommend_resources() -----------------------------------------------------------------


class Resources(TypedDict):
    """What ``recommend_resources()`` returns: vCPUs, memory (MiB), GPUs, VRAM (MiB)."""

    cpu: int
    memory: int
    gpu: int
    vram: int


# -- recommend_server() --------------------------------------------------------------------


class _VendorBase(TypedDict):
    vendor_id: str
    name: str


class Vendor(_VendorBase, total=False):
    """``ServerRecord["vendor"]``: the vendor's Spare Cores record (the columns a catalog
    does not hold are left out: a local catalog holds them all, the Keeper may give fewer)."""

    logo: Optional[str]
    homepage: Optional[str]
    country_id: Optional[str]
    status: Optional[str]
    state: Optional[str]
    city: Optional[str]
    address_line: Optional[str]
    zip_code: Optional[str]
    founding_year: Optional[int]
    status_page: Optional[str]
    observed_at: Optional[str]


class _ServerRecordBase(TypedDict):
    vendor_id: str
    server_id: str
    name: str
    api_reference: str
    display_name: str
    family: Optional[str]
    vcpus: int
    cpu_allocation: str  # 'Shared', 'Burstable' or 'Dedicated'
    cpu_cores: Optional[int]
    cpu_architecture: str  # lower case: 'x86_64', 'arm64'
    cpu_manufacturer: Optional[str]
    cpu_family: Optional[str]
    cpu_model: Optional[str]
    memory_amount: int  # MiB
    gpu_count: int
    gpu_memory_min: Optional[int]  # MiB
    gpu_memory_total: Optional[int]  # MiB
    gpu_manufacturer: Optional[str]
    gpu_family: Optional[str]
    gpu_model: Optional[str]
    storage_size: Optional[int]  # GB
    storage_type: Optional[str]
    network_speed: Optional[float]  # Gbps
    status: str
    price: float  # USD per hour: the cheapest that passes the filters
    min_price: Optional[float]
    min_price_spot: Optional[float]
    min_price_ondemand: Optional[float]
    score: Optional[float]  # stress_ng:bestn
    score_per_price: Optional[float]
    selected_benchmark_score: Optional[float]
    selected_benchmark_score_per_price: Optional[float]
    vendor: Optional[Vendor]
    catalog_source: Optional[str]  # the catalog's path, 'embedded' or 'keeper'
    price_source: str  # the catalog and the date of its prices


class ServerRecord(_ServerRecordBase, total=False):
    """What ``recommend_server()`` returns (a list of them with ``n``): the Spare Cores
    server record with its best price (docs/catalog.md, "The record"). The columns a
    catalog does not hold are left out (the embedded snapshot holds fewer than a
    downloaded dump); a figure the catalog does not know is None. The JSON columns
    (``cpu_flags``, ``cpus``, ``gpus``, ``storages``) are parsed: their items are the
    catalog's, unchecked (``Any``)."""

    description: Optional[str]
    hypervisor: Optional[str]
    cpu_speed: Optional[float]  # GHz
    cpu_l1_cache: Optional[int]
    cpu_l2_cache: Optional[int]
    cpu_l3_cache: Optional[int]
    cpu_flags: Optional[List[str]]
    cpus: Optional[List[Any]]
    memory_generation: Optional[str]
    memory_speed: Optional[int]
    memory_ecc: Optional[int]  # 0/1 (a bool from the Keeper)
    gpus: Optional[List[Any]]
    storages: Optional[List[Any]]
    inbound_traffic: Optional[float]
    outbound_traffic: Optional[float]
    ipv4: Optional[int]
    observed_at: Optional[str]
    price_region_id: str  # where price is: region, allocation ('ondemand' or 'spot') and
    price_allocation: str  # the currency the catalog gives it in (price itself is USD)
    price_currency: str
