"""Inspect and simulate through libmitosis in this process, for the integration scripts that run
many of them on the same traces (started by libpy.bash's libpy, which loads the library).

inspect(path, reader=None) is `mitosis inspect PATH --json` parsed, simulate(path, *words) the text
`mitosis simulate PATH WORDS --json` prints, each trace read once per (path, JSON reader, load
options) and kept. A refusal raises mitosis.Error with the CLI's one-line message and exit code.
The process's environment is the CLI's again at import (no preloaded ASan runtime, the caller's
ASAN_OPTIONS), so a `mitosis` process started from here reports its leaks as the CLI's tests do.
"""
import ctypes
import json
import os

import mitosis
from mitosis import Error
from mitosis._lib import call, lib

for _k in ("ASAN_OPTIONS", "LD_PRELOAD"):
    _v = os.environ.pop("MT_LIBSIM_" + _k, None)
    if _v:
        os.environ[_k] = _v
    else:
        os.environ.pop(_k, None)

_traces = {}


def trace(path, reader=None, step=-1):
    """The loaded trace (read once); reader: "stream" or "dom" (MITOSIS_JSON_READER), None: the default."""
    key = (os.fspath(path), reader, step)
    if key not in _traces:
        old = os.environ.pop("MITOSIS_JSON_READER", None)
        if reader:
            os.environ["MITOSIS_JSON_READER"] = reader
        try:
            _traces[key] = mitosis.load(path, step=step)
        except Error as e:
            _traces[key] = e
        finally:
            os.environ.pop("MITOSIS_JSON_READER", None)
            if old is not None:
                os.environ["MITOSIS_JSON_READER"] = old
    t = _traces[key]
    if isinstance(t, Error):
        raise t
    return t


def inspect(path, reader=None):
    """`mitosis inspect PATH --json`, parsed."""
    return trace(path, reader).summary


def inspect_text(path, reader=None, step=-1):
    """The text `mitosis inspect PATH --json [--step STEP]` prints."""
    p = lib().mitosis_trace_json(trace(path, reader, step)._h, 0)
    if not p:
        raise Error("out of memory", "out of memory", 2)
    try:
        return ctypes.string_at(p).decode()
    finally:
        lib().mitosis_string_free(p)


def simulate(path, *words, reader=None, step=-1):
    """The text `mitosis simulate PATH WORDS --json [--step STEP]` prints (WORDS: the CLI's words,
    numbers allowed)."""
    t = trace(path, reader, step)
    h = ctypes.c_void_p()
    call(lib().mitosis_config_new, b"simulate", ctypes.byref(h))
    try:
        argv = [os.fsencode(str(w)) for w in words]
        call(lib().mitosis_config_set_args, h, len(argv), (ctypes.c_char_p * len(argv))(*argv))
        r = ctypes.c_void_p()
        call(lib().mitosis_simulate, t._h, h, ctypes.byref(r))
        try:
            return lib().mitosis_result_json(r).decode()
        finally:
            lib().mitosis_result_free(r)
    finally:
        lib().mitosis_config_free(h)


def sim(path, *words, reader=None, step=-1):
    """simulate(...) parsed."""
    return json.loads(simulate(path, *words, reader=reader, step=step))


def attempt(fn, *args, **kw):
    """(0, fn(...)), or (exit code, "error: MESSAGE") when it is refused: a CLI run's code and text."""
    try:
        return 0, fn(*args, **kw)
    except Error as e:
        return e.exit_code, "error: " + e.message


def forget(path):
    """Frees every loaded copy of the trace at path (a script done with it)."""
    for k in [k for k in _traces if k[0] == os.fspath(path)]:
        del _traces[k]
