"""Type stub of the C core (private: use the resource_tracker package's public API)."""

from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union, final

__version__: str
PROCESS_COLUMNS: Tuple[str, ...]
SYSTEM_COLUMNS: Tuple[str, ...]
# True where the Linux readers are built (csrc/platform.h). When False (a non-Linux platform or
# RESOURCE_TRACKER_PORTABLE=1) Sampler, gpu_inventory, discover_cloud, cloud_evidence,
# keeper_servers, keeper_prices, keeper_path and KeeperNoAnswerError are absent: psutil samples
# instead.
HAVE_PROCFS: bool
# absent with HAVE_PROCFS False (the Python constants of tracker.py hold)
MIN_INTERVAL: float  # seconds: 0.0001
MAX_INTERVAL: float  # seconds: 86400 (one day)
STOP_TIMEOUT: float  # seconds stop() waits for the thread at most: 2.0
GPU_SERIES_MAX: int  # GPUs of Sampler.gpu_devices() at most: 16 (the first 16 of a machine)
STACKS_MAX_DEPTH: int  # frames a captured stack keeps at most: 128 (then a <truncated> root)
SHORT_RUN_S: float  # seconds: a shorter run has no measurable CPU usage (csrc/stats.c)

_Values = Union[Sequence[float], memoryview, Any]

@final  # a C type without Py_TPFLAGS_BASETYPE
class Sampler:
    """The C sampler: a thread that reads procfs every `interval` seconds.

    A ``resource_tracker.sampling.Sampler`` (the Protocol the tracker drives), as
    ``PsutilSampler`` and ``StoredRun`` are; ``sample_now`` is for the CSV trackers."""

    def __init__(
        self,
        pid: int,
        interval: float,
        children: bool = ...,
        track_processes: bool = ...,
        track_system: bool = ...,
        proc_root: Optional[str] = ...,
        sys_root: Optional[str] = ...,
        nvml_library: Optional[str] = ...,
        adopted_by: int = ...,
        gpu_from_first_row: bool = ...,
        discovery: Optional[str] = ...,
        amd_library: Optional[str] = ...,
    ) -> None:
        """amd_library: AMD's SMI library (amdsmi or ROCm SMI; None: libamd_smi.so, else
        librocm_smi64.so). gpu_from_first_row: the GPU libraries loaded at the first row, not
        at the baseline (a process that ends before its first tick never loads them: the code
        agent's).
        discovery: 'auto' (new members from the members' children lists where procfs has
        them) or 'listing' (list procfs; RESOURCE_TRACKER_CHILD_DISCOVERY)."""
    def start(self) -> None: ...
    def run_after_baseline(self, fn: Callable[[], object], /) -> None:
        """Before start(): the sampler thread starts a thread that calls fn() right after its
        baseline reading (RuntimeError after start() or outside the main interpreter)."""
    def take_after_baseline(self) -> Optional[Callable[[], object]]:
        """The fn of run_after_baseline() when no thread was started for it (the sampler
        stopped or never started before its baseline), now the caller's to run; else None."""
    def record_stacks(self, main_ident: int, max_bytes: int = 0) -> None:
        """Before start(): also record this interpreter's Python stacks at each tick
        (docs/code_profile.md); RuntimeError when it cannot (free-threaded, sub-interpreter)."""
    def stacks(self, compact: bool = ...) -> Optional[Dict[str, Any]]:
        """The stack record (frames, stacks, threads, samples, stats); None without one.
        compact: the samples as bytes (4 uint32 a sample: row, thread, stack, cpu_us)."""
    def stop(self) -> None: ...
    def sample_now(self) -> Optional[Tuple[List[float], List[float]]]: ...
    def wait(self, n: int, timeout: float) -> bool: ...
    def columns(self, table: str) -> List[bytes]: ...
    def column_views(self, table: str) -> Optional[List[memoryview]]:
        """Read-only float64 views of the stored columns (no copy) once stopped, else None."""
    def gpu_devices(self) -> List[Dict[str, Any]]:
        """One dict per GPU (the first GPU_SERIES_MAX; [] without GPUs or the system table):
        index, name, memory_total_mib, and one value per row of the system table (a float64
        memoryview over a copy): utilization (% of the GPU, machine-wide, as nvidia-smi shows
        it) and memory_used_mib."""
    def use_cgroup(
        self, version: int, cpu_dir: str, memory_dir: str, io_dir: str, pids_dir: str = ...
    ) -> None:
        """The tree's columns from its cgroup from the next reading on ('' leaves a column to
        the process walk; pids_dir: the tree's own pids cgroup). ValueError: version not 1/2."""
    def tree_source(self) -> Dict[str, Any]:
        """source, columns (cpu/memory/io: 'cgroup' or 'procfs'), note, cgroup_readings,
        cgroup_reads, walks (docs/metrics.md, "The tree from its own cgroup")."""
    @property
    def state(self) -> str: ...
    @property
    def n_samples(self) -> int: ...
    @property
    def start_time(self) -> float: ...
    @property
    def stop_time(self) -> float: ...
    @property
    def interval(self) -> float: ...
    @property
    def cpu_seconds(self) -> float: ...
    @property
    def pss_seconds(self) -> float: ...
    @property
    def pss_reads(self) -> float: ...
    @property
    def samples_taken(self) -> float: ...
    @property
    def read_errors(self) -> float: ...
    @property
    def rows_dropped(self) -> float: ...
    @property
    def io_denied(self) -> float: ...
    @property
    def tree_seen(self) -> float: ...
    @property
    def tree_missed(self) -> float: ...
    @property
    def pss_denied(self) -> float: ...
    @property
    def memory_hwm(self) -> float: ...
    @property
    def listings(self) -> float: ...
    @property
    def probes(self) -> float: ...
    @property
    def children_scans(self) -> float: ...
    @property
    def wait_reads(self) -> float: ...
    @property
    def wait_carried(self) -> float: ...
    @property
    def list_failures(self) -> float: ...
    @property
    def children_lists(self) -> float: ...
    @property
    def fd_sheds(self) -> float: ...
    @property
    def kept_open(self) -> float: ...
    @property
    def fds_replaced(self) -> float: ...
    @property
    def powercap_zones(self) -> float: ...
    @property
    def powercap_unreadable(self) -> float: ...
    @property
    def powercap_wraps(self) -> float: ...
    @property
    def gpu_energy_integrated(self) -> float: ...
    @property
    def gpu_machine_wide(self) -> float:
        """Readings of a GPU whose process figures are the GPU's (the library cannot tell
        which process uses it: ROCm SMI, or amdsmi without a process list)."""
    def gpu_sources(self) -> Dict[str, Any]:
        """{'tried', 'nvidia', 'amd', 'amd_library'}: the GPU libraries read and their GPUs
        ('amd_library': 'amdsmi', 'rocm_smi' or None; 'tried': False before the first read)."""

@final  # a C type without Py_TPFLAGS_BASETYPE
class ReaderSampler:
    """The C sampling engine (csrc/engine.c) over a Python reader: the psutil backend's.

    The engine owns the thread, the tick grid, the rows, the final reading (folded into the
    last row when short), stop() within STOP_TIMEOUT, fork and interpreter exit (the atexit
    callback close_readers); read(mono, wall, own_cpu_s, own_memory_kib) returns
    (process_row, system_row) or None for the baseline (own_cpu_s: the engine thread's CPU
    seconds, None in sample_now). A reader that raises or returns a bad row is counted in
    read_errors and gives no row. Present in every build (HAVE_PROCFS or not)."""

    def __init__(
        self,
        read: Any,
        interval: float,
        track_processes: bool = ...,
        track_system: bool = ...,
        process_cores: float = ...,
        system_cores: float = ...,
    ) -> None: ...
    def start(self) -> None: ...
    def stop(self) -> None: ...
    def sample_now(self) -> Optional[Tuple[List[float], List[float]]]: ...
    def wait(self, n: int, timeout: float) -> bool: ...
    def columns(self, table: str) -> List[bytes]: ...
    def column_views(self, table: str) -> Optional[List[memoryview]]: ...
    @property
    def state(self) -> str: ...
    @property
    def n_samples(self) -> int: ...
    @property
    def start_time(self) -> float: ...
    @property
    def stop_time(self) -> float: ...
    @property
    def interval(self) -> float: ...
    @property
    def cpu_seconds(self) -> float: ...
    @property
    def samples_taken(self) -> float: ...
    @property
    def read_errors(self) -> float: ...
    @property
    def rows_dropped(self) -> float: ...

def close_readers() -> None:
    """No ReaderSampler calls Python after this (waits for a reading under way): atexit."""

def stats(
    process: Optional[Mapping[str, _Values]],
    system: Optional[Mapping[str, _Values]],
    start_time: float = ...,
    end_time: float = ...,
) -> Dict[str, Dict[str, float]]: ...
def summarize(values: _Values, weights: Optional[_Values] = ...) -> Dict[str, float]: ...
def recommend(stats: Sequence[Mapping[str, Any]]) -> Dict[str, int]:
    """{'cpu', 'memory', 'gpu', 'vram'}: results_types.Resources (csrc/stats.c)."""

def combine_runs(values: Sequence[Optional[float]], peaks: bool) -> Optional[float]: ...
def round_memory_mib(mib: float) -> int: ...
def float64_text(pieces: Sequence[Union[str, memoryview, Any]]) -> str:
    """ASCII str pieces as they are, float64 buffers as base64 of little-endian float64."""

def code_segments(
    samples: Sequence[Sequence[float]],
    main_threads: _Values,
    n_stacks: int,
    timestamp: _Values,
    cpu: _Values,
    memory: _Values,
    gpu: _Values,
    start_time: float,
    agent: bool,
    other_times: _Values,
    other_cumulative: _Values,
) -> Tuple[bytes, bytes]:
    """The attributed segments of a process's stack samples (code_profile._Attributed): 6
    float64 a segment, 4 an entry."""

def code_busiest(segments: _Values, entries: _Values, preferred: _Values) -> bytes:
    """Each segment's busiest stack among the preferred ones, else among all (float64)."""

def code_totals(
    segments: _Values,
    entries: _Values,
    key_first: _Values,
    keys: _Values,
    self_key: _Values,
    n_keys: int,
    start: float,
    end: float,
) -> bytes:
    """The 7 figures of each code location over the segments ending in (start, end]."""

def code_groups(
    codes: _Values,
    times: _Values,
    memory: _Values,
    group_of: _Values,
    n_groups: int,
    interval: float,
    start: float,
    end: float,
) -> bytes:
    """The intervals in (start, end] whose code has a group, summed by group (6 float64 a
    group: count, first, seconds, peak, peak_at, growth)."""

def change_points(values: _Values, floor: float, max_points: int, min_len: int) -> List[int]:
    """Where the mean of values steps by more than floor (insights.change_points)."""

def chart_series(
    values: _Values,
    drawing: str,
    max_points: int,
    timestamps: Optional[_Values] = ...,
    interval: float = ...,
    limit: float = ...,
) -> str:
    """The JSON array of a column as drawn ('as_is', 'kib_as_mib', 'per_second', 'at_most'),
    downsampled to at most max_points points (each bucket's lowest and highest value)."""

def chart_times(timestamps: _Values, t0: float, max_points: int) -> str:
    """The JSON array of the same points' times minus t0, with 3 decimals."""

def gpu_inventory(
    library_path: Optional[str] = ..., amd_library: Optional[str] = ...
) -> List[Dict[str, Any]]: ...
def discover_cloud(
    sysfs_root: Optional[str] = ..., metadata_url: Optional[str] = ..., timeout: float = ...
) -> Dict[str, Any]: ...
def cloud_evidence(sysfs_root: Optional[str] = ...) -> Optional[str]: ...

class KeeperNoAnswerError(RuntimeError): ...

def keeper_servers(
    base_url: str,
    timeout: float = ...,
    vcpus_min: int = ...,
    memory_min_mib: float = ...,
    gpu_min: int = ...,
    gpu_memory_min_mib: float = ...,
    gpu_memory_total_mib: float = ...,
    vendors: Optional[Sequence[str]] = ...,
    regions: Optional[Sequence[str]] = ...,
    countries: Optional[Sequence[str]] = ...,
    architectures: Optional[Sequence[str]] = ...,
    compliance_frameworks: Optional[Sequence[str]] = ...,
    allocation: Optional[str] = ...,
    green_energy: bool = ...,
    price_max: float = ...,
    order_by: Optional[str] = ...,
    order_dir: Optional[str] = ...,
    limit: int = ...,
) -> Tuple[str, Any]: ...
def keeper_prices(
    base_url: str, vendor: str, server: str, timeout: float = ...
) -> Tuple[str, Any]: ...
def keeper_path(base_url: str, path: str, timeout: float = ...) -> Tuple[str, Any]: ...

COLUMN_REGISTRY: Tuple[Tuple[str, str, str, str, str, str, str, int, str, str], ...]
FOLD_SHARE: float
FOLD_MIN_SECONDS: float
FINAL_MIN_SECONDS: float
CLOCK_TICK: float

def cpu_rate(cpu_s: float, dt: float, cores: float) -> float: ...
def fold_rows(
    table: str, rows: Sequence[Sequence[float]], dt: float, cores: float
) -> List[float]: ...
def next_tick(start: float, previous: float, now: float, interval: float) -> float: ...
def folds_into_last(dt: float, interval: float, has_rows: bool, may_fold: bool) -> bool: ...
def takes_final(since_last: float, has_rows: bool) -> bool: ...
def capture_period(elapsed: float, tick: float) -> float: ...
def capture_serves_tick(elapsed: float, since: float, tick: float) -> bool: ...
def cgroup_keyed(text: str) -> Dict[str, int]: ...
def read_regular_file(path: str, limit: int) -> Optional[bytes]: ...
def close_jobs() -> None:
    """No job started by a sampler thread runs after this (waits for one under way)."""

def stop_stacks() -> None:
    """Stops every stack capture of this process, waiting for one under way (atexit)."""

def stacks_unsupported() -> Optional[str]:
    """Why no stack can be recorded in this interpreter, or None."""

def skip_thread_stacks(ident: int, skip: bool = True, /) -> bool:
    """The Python thread ident, one of the tracker's own, left out of every code profile of
    this process from now on (skip=False: sampled again; a thread removes itself before it
    ends, its ident being reused); False when the registry is full (csrc/skip_threads.h)."""

def term_hook(callable: Callable[[], object], /) -> bool:
    """SIGTERM answered from a thread of the C core from now on (callable() with the GIL, then
    SIGTERM's default action unless it returned False); False when SIGTERM's action is not the
    default or a hook is installed already (csrc/term_hook.h)."""
