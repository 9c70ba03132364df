"""Build hook of the mitosis package: the wheel carries libmitosis, so an installed package imports
in any venv or Jupyter kernel with no MITOSIS_LIB (pip install --no-build-isolation --no-index
./python, after cmake --build build).

The library carried, first found wins: $MITOSIS_LIB; the checkout's build folder beside this one
(../build/libmitosis.so.0, then the newest ../build*/, sanitizer builds left out: they load only
with the ASan runtime preloaded). Nothing found: the package is built without it when the system
has libmitosis.so.0 (cmake --install), else the build stops saying what to do. Carrying the
library rather than finding it at import (an install prefix, the binary on $PATH, the clone's
path recorded) keeps the package working whatever the environment and wherever the clone goes;
its price is a reinstall after rebuilding the library (MITOSIS_LIB still wins at import).
"""
import ctypes
import glob
import os
import shutil
import sys

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
SONAME = "libmitosis.so.0"


def _asan(path):
    with open(path, "rb") as f:
        return b"libasan.so" in f.read()


def _library():
    env = os.environ.get("MITOSIS_LIB")
    if env:
        if not os.path.isfile(env):
            sys.exit("mitosis: MITOSIS_LIB=%s is not a file (the path of libmitosis.so.0)" % env)
        return env
    builds = sorted(glob.glob(os.path.join(HERE, "..", "build*")), key=os.path.getmtime, reverse=True)
    builds.sort(key=lambda d: os.path.basename(d) != "build")
    for d in builds:
        p = os.path.join(d, SONAME)
        if os.path.isfile(p) and not _asan(p):
            return p
    try:
        ctypes.CDLL(SONAME)
        return None  # the system's, found at import
    except OSError:
        sys.exit("mitosis: no libmitosis to put in the package: build it first (cmake -S . -B build && cmake "
                 "--build build), or set MITOSIS_LIB to its path, or install it (cmake --install build)")


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        lib = _library()
        if lib:
            dst = os.path.join(self.build_lib, "mitosis", SONAME)
            shutil.copyfile(lib, dst)  # the file the soname link names
            os.chmod(dst, 0o755)
            print("mitosis: carrying %s" % os.path.realpath(lib))


class BinaryDistribution(Distribution):
    def has_ext_modules(self):  # a platform wheel: it holds a Linux shared library
        return True


setup(cmdclass={"build_py": BuildWithLibrary}, distclass=BinaryDistribution)
