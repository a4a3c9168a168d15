"""Build the C core `resource_tracker._core` from csrc/.

Before compiling, the build checks what it needs (a C compiler, the Python headers and, for the
Linux readers, the cJSON and libcurl headers) with tiny test compiles, and stops with one message
naming what is missing and the package that provides it (apt, dnf, brew) instead of a compiler
error. libcurl itself is loaded with dlopen at run time; its headers are needed to build.

Build switches (environment variables):
  RESOURCE_TRACKER_SANITIZE=1  AddressSanitizer + UndefinedBehaviorSanitizer
  RESOURCE_TRACKER_DEBUG=1     -O0 -g3, assertions on
  RESOURCE_TRACKER_COVERAGE=1  gcov instrumentation
  RESOURCE_TRACKER_NO_BUILD_CHECK=1  compile without checking compiler and headers first
  RESOURCE_TRACKER_PORTABLE=1  the portable core alone, as a non-Linux platform builds it
                               (csrc/platform.h): no procfs/cgroup readers, NVML, cloud or
                               Keeper; Python samples with psutil. Always on off Linux.
"""

import os
import subprocess
import sys
import tempfile
from glob import glob

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CompileError

# The portable core (csrc/platform.h); every other csrc/*.c file is a Linux reader.
PORTABLE_SOURCES = [
    "csrc/attribution.c",
    "csrc/cgroup_parse.c",
    "csrc/chart.c",
    "csrc/columns.c",
    "csrc/engine.c",
    "csrc/float64_text.c",
    "csrc/module.c",
    "csrc/phases.c",
    "csrc/py_attribution.c",
    "csrc/py_columns.c",
    "csrc/py_encode.c",
    "csrc/py_engine.c",
    "csrc/py_files.c",
    "csrc/py_gate.c",
    "csrc/py_reader.c",
    "csrc/py_rules.c",
    "csrc/py_series.c",
    "csrc/py_stats.c",
    "csrc/py_views.c",
    "csrc/row_rules.c",
    "csrc/schedule.c",
    "csrc/stats.c",
    "csrc/table.c",
    "csrc/textbuf.c",
    "csrc/thread_start.c",
    "csrc/thread_state.c",
]


def _flag(name):
    return os.environ.get(name, "") not in ("", "0")


PORTABLE = _flag("RESOURCE_TRACKER_PORTABLE") or not sys.platform.startswith("linux")


def _compile_args():
    args = [
        "-std=c11",
        "-Wall",
        "-Wextra",
        "-Wno-missing-field-initializers",
        "-Werror=implicit-function-declaration",
        "-fvisibility=hidden",
    ]
    if not PORTABLE:
        args += ["-D_GNU_SOURCE"]
    elif sys.platform.startswith("linux"):
        # as a non-Linux platform would: glibc declares POSIX only, no GNU extensions (mremap)
        args += ["-D_POSIX_C_SOURCE=200809L"]
    if _flag("RESOURCE_TRACKER_DEBUG") or _flag("RESOURCE_TRACKER_SANITIZE"):
        args += ["-O0", "-g3", "-UNDEBUG"]
    else:
        args += ["-O2"]
    if _flag("RESOURCE_TRACKER_SANITIZE"):
        args += ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"]
    if _flag("RESOURCE_TRACKER_COVERAGE"):
        args += ["--coverage"]
    return args


def _link_args():
    args = []
    if _flag("RESOURCE_TRACKER_SANITIZE"):
        args += ["-fsanitize=address,undefined"]
    if _flag("RESOURCE_TRACKER_COVERAGE"):
        args += ["--coverage"]
    return args


def _version():
    about = {}
    with open(os.path.join("resource_tracker", "_version.py")) as f:
        exec(f.read(), about)
    return about["__version__"]


# -- what the build needs, checked before compiling ------------------------------------------

_PY = f"{sys.version_info[0]}.{sys.version_info[1]}"


class Need:
    """One thing the build needs: a header (and library) to probe, and where to get it."""

    def __init__(self, what, apt, dnf, brew, header=None, library=None):
        self.what, self.apt, self.dnf, self.brew = what, apt, dnf, brew
        self.header, self.library = header, library

    def advice(self):
        return (
            f"  - {self.what}\n"
            f"      Debian/Ubuntu: sudo apt-get install {self.apt}\n"
            f"      Fedora/RHEL:   sudo dnf install {self.dnf}\n"
            f"      macOS:         {self.brew}"
        )


COMPILER = Need(
    "a C compiler with the C library headers (stdlib.h)",
    apt="build-essential   (gcc and libc6-dev)",
    dnf="gcc",
    brew="xcode-select --install   (the Command Line Tools)",
)
PYTHON_HEADERS = Need(
    f"the Python {_PY} headers (Python.h)",
    apt=f"python3-dev   (for another Python than Debian's: python{_PY}-dev)",
    dnf=f"python3-devel   (for another Python than Fedora's: python{_PY}-devel)",
    brew=f"brew install python@{_PY}   (or the python.org installer; both ship the headers)",
    header="Python.h",
)
LINUX_READER_NEEDS = [
    Need(
        "the cJSON headers and library (cjson/cJSON.h, -lcjson)",
        apt="libcjson-dev",
        dnf="cjson-devel   (RHEL: from EPEL)",
        brew="brew install cjson",
        header="cjson/cJSON.h",
        library="cjson",
    ),
    Need(
        "the libcurl headers (curl/curl.h; libcurl itself is loaded at run time)",
        apt="libcurl4-openssl-dev",
        dnf="libcurl-devel",
        brew="brew install curl",
        header="curl/curl.h",
    ),
]


def _run(cmd):
    """True when cmd ran and succeeded (its output is kept out of the user's way)."""
    try:
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT).returncode == 0
    except OSError:  # the compiler itself is missing
        return False


def missing_needs(compiler, include_dirs, needs):
    """The needs that a tiny test compile (and link) shows missing; [] when all are there.

    Only a Unix-style compiler (gcc, clang) is probed; another one builds unchecked."""
    if getattr(compiler, "compiler_type", "") != "unix":
        return []
    cc = list(compiler.compiler_so)
    linker = list(compiler.linker_so)
    includes = [f"-I{d}" for d in list(include_dirs) + list(compiler.include_dirs)]
    with tempfile.TemporaryDirectory(prefix="rt-probe-") as tmp:

        def compiles(header):
            src, obj = os.path.join(tmp, "probe.c"), os.path.join(tmp, "probe.o")
            with open(src, "w") as f:
                f.write(f"#include <{header or 'stdlib.h'}>\nint rt_probe(void);\n")
                f.write("int rt_probe(void) { return 0; }\n")
            return _run(cc + includes + ["-c", src, "-o", obj])

        def links(library):
            obj, lib = os.path.join(tmp, "probe.o"), os.path.join(tmp, "probe.so")
            return compiles(None) and _run(linker + [obj, "-o", lib, f"-l{library}"])

        if not compiles(None):
            return [COMPILER]  # nothing else can be checked without one
        return [
            need
            for need in needs
            if not compiles(need.header) or (need.library and not links(need.library))
        ]


def missing_message(missing):
    """One message for the user: what is missing, and the package to install on each system."""
    lines = ["resource-tracker cannot build its C core; missing:"]
    lines += [need.advice() for need in missing]
    lines.append("Install what is missing, then run the install again.")
    return "\n".join(lines)


class CheckedBuildExt(build_ext):
    """build_ext that first checks the compiler and the headers (one clear message when not)."""

    def build_extensions(self):
        if not _flag("RESOURCE_TRACKER_NO_BUILD_CHECK"):
            needs = [PYTHON_HEADERS] + ([] if PORTABLE else LINUX_READER_NEEDS)
            missing = missing_needs(self.compiler, self.include_dirs or [], needs)
            if missing:
                raise CompileError(missing_message(missing))
        super().build_extensions()


core = Extension(
    "resource_tracker._core",
    sources=PORTABLE_SOURCES if PORTABLE else sorted(glob("csrc/*.c")),
    # _version.py: RT_VERSION below (a new version rebuilds the core)
    depends=sorted(glob("csrc/*.h")) + [os.path.join("resource_tracker", "_version.py")],
    include_dirs=["csrc"],
    define_macros=[("RT_VERSION", f'"{_version()}"')] + [("RT_PORTABLE", "1")] * PORTABLE,
    # libcurl: dlopen on first use (csrc/http.c); the portable core needs no library
    libraries=[] if PORTABLE else ["pthread", "dl", "cjson"],
    extra_compile_args=_compile_args(),
    extra_link_args=_link_args(),
)

setup(ext_modules=[core], cmdclass={"build_ext": CheckedBuildExt})
