"""Build the C core `resource_tracker._core` from csrc/.

Build switches (environment variables):
  RESOURCE_TRACKER_SANITIZE=1  AddressSanitizer + UndefinedBehaviorSanitizer
  RESOURCE_TRACKER_DEBUG=1     -O0 -g3, assertions on
  RESOURCE_TRACKER_COVERAGE=1  gcov instrumentation
"""

import os
import sys
from glob import glob

from setuptools import Extension, setup


def _flag(name):
    return os.environ.get(name, "") not in ("", "0")


def _compile_args():
    args = [
        "-std=c11",
        "-Wall",
        "-Wextra",
        "-Wno-missing-field-initializers",
        "-fvisibility=hidden",
        "-D_GNU_SOURCE",
    ]
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


libraries = ["pthread"]
if sys.platform.startswith("linux"):
    libraries += ["dl", "cjson"]  # libcurl: dlopen on first use (csrc/http.c)


def _version():
    about = {}
    with open(os.path.join("resource_tracker", "_version.py")) as f:
        exec(f.read(), about)
    return about["__version__"]


core = Extension(
    "resource_tracker._core",
    sources=sorted(glob("csrc/*.c")),
    depends=sorted(glob("csrc/*.h")),
    include_dirs=["csrc"],
    define_macros=[("RT_VERSION", f'"{_version()}"')],
    libraries=libraries,
    extra_compile_args=_compile_args(),
    extra_link_args=_link_args(),
)

setup(ext_modules=[core])
