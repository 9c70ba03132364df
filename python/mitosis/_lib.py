"""ctypes binding of libmitosis (include/mitosis.h): the library located, its functions typed.

Where the library comes from, first found wins:
  1. $MITOSIS_LIB (the path of libmitosis.so*);
  2. the build tree of the repository this package was imported from (../build*/libmitosis.so.0,
     newest first) -- running from a checkout;
  3. the copy an installed package carries (python/setup.py puts the built library in the wheel);
  4. the system's: libmitosis.so.0 as `cmake --install` put it (ld.so's search path, ldconfig).
The mitosis binary (python3 -m mitosis) is looked up the same way: $MITOSIS_BIN, beside the
library (build tree or PREFIX/bin), then $PATH.
"""

import ctypes
import ctypes.util
import glob
import os
import shutil

SONAME = "libmitosis.so.0"
_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(os.path.dirname(_HERE))


class Error(Exception):
    """A refusal or failure of mitosis: str(e) is the CLI's one-line message; e.code its short name
    ("invalid argument", ...), e.exit_code what the CLI would exit with."""

    def __init__(self, message, code="invalid argument", exit_code=2):
        super().__init__(message)
        self.message = message
        self.code = code
        self.exit_code = exit_code


class ArgumentTypeError(Error, TypeError):
    """A Python argument of the wrong type (None or a list where a path or one value goes, a dict as
    an option's value...): a mitosis.Error that is also a TypeError."""


class ArgumentValueError(Error, ValueError):
    """A Python argument of the right type but a value libmitosis cannot take as given: a NUL byte in
    a string (C would cut it there), an integer outside C's int (ctypes would wrap it), no paths:
    a mitosis.Error that is also a ValueError."""


def text_arg(what, v):
    """v (str, bytes or os.PathLike) as the bytes a C string takes; refuses None, other types and NUL."""
    if isinstance(v, os.PathLike):
        v = os.fspath(v)
    if isinstance(v, str):
        b = v.encode()
    elif isinstance(v, bytes):
        b = v
    else:
        raise ArgumentTypeError("%s must be a string (got %s)" % (what, type(v).__name__))
    if b"\0" in b:
        raise ArgumentValueError("%s holds a NUL byte (%r): C would read only what comes before it" % (what, v))
    return b


INT_MIN, INT_MAX = -2**31, 2**31 - 1


def int_arg(what, v, lo=INT_MIN, hi=INT_MAX):
    """v as a C int in lo..hi; refuses bools, floats, other types and values out of range (ctypes wraps them)."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise ArgumentTypeError("%s must be an integer (got %s)" % (what, type(v).__name__))
    if not lo <= v <= hi:
        raise ArgumentValueError("%s must be an integer in %d..%d (got %d)" % (what, lo, hi, v))
    return v


class _Err(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("message", ctypes.c_char * 1024)]


def _candidates():
    env = os.environ.get("MITOSIS_LIB")
    if env:
        return [env]
    found = glob.glob(os.path.join(_REPO, "build*", SONAME))
    found.sort(key=os.path.getmtime, reverse=True)
    carried = os.path.join(_HERE, SONAME)
    return found + ([carried] if os.path.isfile(carried) else []) + [SONAME]


def _load():
    tried = []
    for path in _candidates():
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    raise Error("cannot load libmitosis: tried %s; build it (cmake --build build) or install it "
                "(cmake --install build), or set MITOSIS_LIB to its path" % "; ".join(tried), "i/o error", 2)


_lib = None
_lib_path = None

_P = ctypes.c_void_p
_S = ctypes.c_char_p
_E = ctypes.POINTER(_Err)
_SIGS = {
    "mitosis_version": (_S, []),
    "mitosis_code_name": (_S, [ctypes.c_int]),
    "mitosis_exit_code": (ctypes.c_int, [ctypes.c_int]),
    "mitosis_string_free": (None, [_P]),
    "mitosis_trace_open": (ctypes.c_int, [ctypes.POINTER(_S), ctypes.c_int, ctypes.c_int, ctypes.POINTER(_P), _E]),
    "mitosis_trace_free": (None, [_P]),
    "mitosis_trace_json": (_P, [_P, ctypes.c_int]),
    "mitosis_config_new": (ctypes.c_int, [_S, ctypes.POINTER(_P), _E]),
    "mitosis_config_free": (None, [_P]),
    "mitosis_config_set": (ctypes.c_int, [_P, _S, _S, _E]),
    "mitosis_config_unset": (ctypes.c_int, [_P, _S, _E]),
    "mitosis_config_set_args": (ctypes.c_int, [_P, ctypes.c_int, ctypes.POINTER(_S), _E]),
    "mitosis_config_command": (_S, [_P]),
    "mitosis_config_words": (ctypes.c_int, [_P]),
    "mitosis_config_word": (_S, [_P, ctypes.c_int]),
    "mitosis_trace_ops": (ctypes.c_int, [_P]),
    "mitosis_trace_batch": (ctypes.c_longlong, [_P]),
    "mitosis_result_gpus": (ctypes.c_int, [_P]),
    "mitosis_result_peak_mem_bytes": (ctypes.c_double, [_P]),
    "mitosis_comparison_rows": (ctypes.c_int, [_P]),
    "mitosis_comparison_label": (_S, [_P, ctypes.c_int]),
    "mitosis_comparison_step_ms": (ctypes.c_double, [_P, ctypes.c_int]),
    "mitosis_comparison_best": (ctypes.c_int, [_P]),
    "mitosis_simulate": (ctypes.c_int, [_P, _P, ctypes.POINTER(_P), _E]),
    "mitosis_result_free": (None, [_P]),
    "mitosis_result_step_ms": (ctypes.c_double, [_P]),
    "mitosis_result_base_step_ms": (ctypes.c_double, [_P]),
    "mitosis_result_json": (_S, [_P]),
    "mitosis_result_warnings": (ctypes.c_int, [_P]),
    "mitosis_result_warning": (_S, [_P, ctypes.c_int]),
    "mitosis_result_write": (ctypes.c_int, [_P, _S, _S, _E]),
    "mitosis_outputs": (ctypes.c_int, []),
    "mitosis_output_name": (_S, [ctypes.c_int]),
    "mitosis_output_help": (_S, [ctypes.c_int]),
    "mitosis_output_is_dir": (ctypes.c_int, [ctypes.c_int]),
    "mitosis_compare": (ctypes.c_int, [_P, _P, ctypes.POINTER(_P), _E]),
    "mitosis_comparison_free": (None, [_P]),
    "mitosis_comparison_json": (_S, [_P]),
    "mitosis_cluster": (ctypes.c_int, [_S, _S, ctypes.POINTER(_P), _E]),
    "mitosis_topology_fill": (ctypes.c_int, [_S, ctypes.c_int, ctypes.c_int, ctypes.POINTER(_P), _E]),
}


def lib():
    """The loaded library, typed (loaded on first use)."""
    global _lib, _lib_path
    if _lib is None:
        handle, path = _load()
        for name, (res, args) in _SIGS.items():
            f = getattr(handle, name)
            f.restype = res
            f.argtypes = args
        _lib, _lib_path = handle, path
    return _lib


def lib_path():
    lib()
    return _lib_path


def call(fn, *args):
    """Calls a libmitosis function whose last argument is the error; raises Error on failure."""
    e = _Err()
    rc = fn(*args, ctypes.byref(e))
    if rc != 0:
        raise Error(e.message.decode("utf-8", "replace"), lib().mitosis_code_name(rc).decode(),
                    lib().mitosis_exit_code(rc))


def binary():
    """The mitosis command-line program, or None."""
    env = os.environ.get("MITOSIS_BIN")
    if env:
        return env
    d = os.path.dirname(os.path.realpath(lib_path())) if os.path.sep in lib_path() else None
    for p in ([os.path.join(d, "mitosis"), os.path.join(d, "..", "bin", "mitosis")] if d else []):
        if os.access(p, os.X_OK) and os.path.isfile(p):
            return p
    return shutil.which("mitosis")
