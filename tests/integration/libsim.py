"""Many `mitosis simulate` runs in one process: libmitosis (python/mitosis) opens each trace once and
simulates each configuration of it, where every run of the CLI would start a process (under ASan about
0.3 CPU s) and parse the trace again (gpt-tiny's: 1.7 CPU s under ASan).

mitosis_result_json is byte for byte `simulate --json` (include/mitosis.h) and the configuration is set
from the same command-line words (mitosis_config_set_args: the CLI's flag table), so Sim.simulate(trace,
*args) answers what `mitosis simulate TRACE ARGS --json` prints: (exit code, stdout, stderr), stderr the
CLI's lines ("mitosis simulate: MESSAGE" on a refusal, "mitosis simulate: warning: ..." after a result).
Checks of the CLI itself (its text report, its exit codes and messages, the files its flags write) keep
running the binary: Sim.run(*args).

The library is the one beside the binary (libmitosis.so.0 in the build folder). A sanitizer build's
library needs its runtime loaded first: the scripts start python through libsim.bash (libsim_python),
which preloads it (leak reports off: they would be the interpreter's) and keeps the caller's LD_PRELOAD
and ASAN_OPTIONS in MT_LIBSIM_* for the binary's own runs, which keep LeakSanitizer, and sets MT_LIBSIM_ON=1.
Without it (a python not started so, MT_LIBSIM=0, no library beside the binary) Sim runs the binary for
everything: the same answers, slower.

The module's functions (load, inspect, inspect_text, simulate, sim, attempt, forget) are for the scripts that
read traces many ways (readers, steps, inspect summaries: stream_dom, step_filter, recognise, inspect_cli;
started by libsim.bash's libpy, which requires the library): inspect(path, reader=None) is `mitosis inspect
PATH --json` parsed, simulate(path, *words) the text `mitosis simulate PATH WORDS --json` prints, each trace
read once per (path, JSON reader, load options) and kept; a refusal raises libsim.Error (mitosis.Error) with
the CLI's one-line message and exit code. At import the process's environment is the CLI's again (the
caller's LD_PRELOAD and ASAN_OPTIONS from MT_LIBSIM_*), so a `mitosis` process started from here, by Sim.run
or otherwise, reports its leaks as the CLI's tests do.
"""
import json
import os
import subprocess
import sys
import threading

# Flags that change how a trace loads, ask for an output file or shape the CLI's JSON (--layers).
CLI_ONLY = ("--step", "--moe-pattern", "--html", "--timeline", "--csv", "--chakra", "--kineto", "--layers",
            "--per-gpu")

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def _restore_env():
    """The caller's LD_PRELOAD and ASAN_OPTIONS back in os.environ (libsim.bash kept them in MT_LIBSIM_*):
    this process's sanitizer runtime is loaded already; the processes it starts are the CLI's."""
    for k in ("LD_PRELOAD", "ASAN_OPTIONS"):
        was = os.environ.pop("MT_LIBSIM_" + k, None)
        if was is None:
            continue
        if was:
            os.environ[k] = was
        else:
            os.environ.pop(k, None)


_restore_env()


class Sim:
    def __init__(self, binary):
        self.bin = os.path.abspath(binary)
        self.env = dict(os.environ)
        self.runs = self.lib_runs = 0
        self._traces, self._lock, self.m = {}, threading.Lock(), None
        lib = os.path.join(os.path.dirname(self.bin), "libmitosis.so.0")
        if os.environ.get("MT_LIBSIM_ON") == "1" and os.path.exists(lib):
            os.environ["MITOSIS_LIB"], os.environ["MITOSIS_BIN"] = lib, self.bin
            sys.path.insert(0, os.path.join(ROOT, "python"))
            import mitosis
            self.m = mitosis

    def run(self, *args, timeout=600):
        """(exit code, stdout, stderr) of the binary: `mitosis ARGS`."""
        self.runs += 1
        p = subprocess.run([self.bin, *map(str, args)], capture_output=True, text=True, timeout=timeout,
                           env=self.env)
        return p.returncode, p.stdout, p.stderr

    def trace(self, path):
        """The trace at path, opened once (any thread)."""
        path = os.path.abspath(path)
        with self._lock:
            if path not in self._traces:
                self._traces[path] = self.m.Trace(path)
            return self._traces[path]

    def forget(self, path):
        """Frees the trace opened at path (a script done with it)."""
        with self._lock:
            self._traces.pop(os.path.abspath(path), None)

    def _config(self, command, args):
        """A configuration of `command` from command-line words (mitosis_config_set_args)."""
        m = self.m
        cfg = m._Config(command, {})
        words = [m._b(str(a), "an argument") for a in args]
        m.call(m.lib().mitosis_config_set_args, cfg._h, len(words), (m.ctypes.c_char_p * max(1, len(words)))(*words))
        return cfg

    def result(self, trace, *args):
        """A mitosis.Result of `simulate TRACE ARGS` (raises mitosis.Error), through the library."""
        m = self.m
        cfg = self._config("simulate", args)
        h = m.ctypes.c_void_p()
        t = self.trace(trace)
        m.call(m.lib().mitosis_simulate, t._h, cfg._h, m.ctypes.byref(h))
        self.lib_runs += 1
        return m.Result(t, cfg, h)

    def simulate(self, trace, *args):
        """What `mitosis simulate TRACE ARGS --json` gives: (exit code, stdout, stderr). A load option or
        an output file (CLI_ONLY) runs the binary: the library's trace is loaded already, and its files
        are written by simulate_writing."""
        if self.m is None or any(str(a) in CLI_ONLY for a in args):
            return self.run("simulate", trace, *args, "--json")
        try:
            r = self.result(trace, *args)
        except self.m.Error as e:
            return e.exit_code, "", f"mitosis simulate: {e.message}\n"
        return 0, r.to_json(), "".join(f"mitosis simulate: warning: {w}\n" for w in r.warnings)

    def simulate_writing(self, trace, args, outputs):
        """simulate() that also writes the files `simulate --NAME PATH` writes, for each NAME: PATH of
        outputs (csv, html, timeline, chakra...): (exit code, stdout, stderr)."""
        if self.m is None:
            flags = [w for name, path in outputs.items() for w in (f"--{name}", path)]
            return self.run("simulate", trace, *args, *flags, "--json")
        try:
            r = self.result(trace, *args)
            for name, path in outputs.items():
                r._write(name, path)
        except self.m.Error as e:
            return e.exit_code, "", f"mitosis simulate: {e.message}\n"
        return 0, r.to_json(), "".join(f"mitosis simulate: warning: {w}\n" for w in r.warnings)

    def compare(self, trace, *args):
        """What `mitosis compare TRACE ARGS --json` gives: (exit code, stdout, stderr)."""
        if self.m is None:
            return self.run("compare", trace, *args, "--json")
        m = self.m
        try:
            cfg = self._config("compare", args)
            h = m.ctypes.c_void_p()
            m.call(m.lib().mitosis_compare, self.trace(trace)._h, cfg._h, m.ctypes.byref(h))
        except m.Error as e:
            return e.exit_code, "", f"mitosis compare: {e.message}\n"
        self.lib_runs += 1
        try:
            return 0, m.lib().mitosis_comparison_json(h).decode(), ""
        finally:
            m.lib().mitosis_comparison_free(h)

    def sim_json(self, trace, *args):
        """simulate's JSON as a dict; AssertionError naming the run when it fails."""
        rc, out, err = self.simulate(trace, *args)
        if rc != 0:
            raise AssertionError(f"simulate {trace} {' '.join(map(str, args))}: exit {rc}: {err.strip()[:300]}")
        return json.loads(out)

    def inspect_json(self, trace):
        """`mitosis inspect TRACE --json` as a dict (the library's summary of the open trace)."""
        if self.m is None:
            rc, out, err = self.run("inspect", trace, "--json")
            if rc != 0:
                raise AssertionError(f"inspect {trace}: exit {rc}: {err.strip()[:300]}")
            return json.loads(out)
        return dict(self.trace(trace).summary)

    def summary(self):
        return f"{self.lib_runs} simulations through libmitosis, {self.runs} runs of the binary"


class Checks:
    """A script's checks: checks(name, ok, detail) prints "ok: name" or "FAIL: name" (and the detail)
    and counts the failures; checks.guard(name, f) checks f() (a check whose run may fail): an
    exception fails it, named, and so does a false result (None: f only asserts)."""

    def __init__(self):
        self.fails = 0

    def __call__(self, name, ok, detail=""):
        print(("ok: " if ok else "FAIL: ") + name + (f"\n  {detail}" if detail and not ok else ""))
        self.fails += not ok
        return ok

    def guard(self, name, f):
        try:
            r = f()
        except Exception as e:  # noqa: BLE001  (a failed run, a KeyError, an assertion: the check fails)
            return self(name, False, f"{type(e).__name__}: {e}")
        return self(name, r is None or bool(r), repr(r))


# ---- readers, steps and inspect summaries through the library (module functions; see the top) ----------

_loaded = {}


def _m():
    """The mitosis package (python/), on the library libsim.bash's libpy names (MITOSIS_LIB)."""
    if ROOT + "/python" not in sys.path:
        sys.path.insert(0, os.path.join(ROOT, "python"))
    import mitosis
    return mitosis


def __getattr__(name):
    if name == "Error":  # libsim.Error: mitosis.Error, imported when first named
        return _m().Error
    raise AttributeError(name)


def load(path, reader=None, step=-1):
    """The loaded trace (read once); reader: "stream" or "dom" (MITOSIS_JSON_READER), None: the default."""
    m = _m()
    key = (os.fspath(path), reader, step)
    if key not in _loaded:
        old = os.environ.pop("MITOSIS_JSON_READER", None)
        if reader:
            os.environ["MITOSIS_JSON_READER"] = reader
        try:
            _loaded[key] = m.load(path, step=step)
        except m.Error as e:
            _loaded[key] = e
        finally:
            os.environ.pop("MITOSIS_JSON_READER", None)
            if old is not None:
                os.environ["MITOSIS_JSON_READER"] = old
    t = _loaded[key]
    if isinstance(t, m.Error):
        raise t
    return t


def inspect(path, reader=None):
    """`mitosis inspect PATH --json`, parsed."""
    return load(path, reader).summary


def inspect_text(path, reader=None, step=-1):
    """The text `mitosis inspect PATH --json [--step STEP]` prints."""
    m = _m()
    p = m.lib().mitosis_trace_json(load(path, reader, step)._h, 0)
    if not p:
        raise m.Error("out of memory", "out of memory", 2)
    try:
        return m.ctypes.string_at(p).decode()
    finally:
        m.lib().mitosis_string_free(p)


def simulate(path, *words, reader=None, step=-1):
    """The text `mitosis simulate PATH WORDS --json [--step STEP]` prints (WORDS: the CLI's words,
    numbers allowed)."""
    m, ctypes = _m(), _m().ctypes
    t = load(path, reader, step)
    h = ctypes.c_void_p()
    m.call(m.lib().mitosis_config_new, b"simulate", ctypes.byref(h))
    try:
        argv = [os.fsencode(str(w)) for w in words]
        m.call(m.lib().mitosis_config_set_args, h, len(argv), (ctypes.c_char_p * len(argv))(*argv))
        r = ctypes.c_void_p()
        m.call(m.lib().mitosis_simulate, t._h, h, ctypes.byref(r))
        try:
            return m.lib().mitosis_result_json(r).decode()
        finally:
            m.lib().mitosis_result_free(r)
    finally:
        m.lib().mitosis_config_free(h)


def sim(path, *words, reader=None, step=-1):
    """simulate(...) parsed."""
    return json.loads(simulate(path, *words, reader=reader, step=step))


def attempt(fn, *args, **kw):
    """(0, fn(...)), or (exit code, "error: MESSAGE") when it is refused: a CLI run's code and text."""
    try:
        return 0, fn(*args, **kw)
    except _m().Error as e:
        return e.exit_code, "error: " + e.message


def forget(path):
    """Frees every loaded copy of the trace at path (a script done with it)."""
    for k in [k for k in _loaded if k[0] == os.fspath(path)]:
        del _loaded[k]
