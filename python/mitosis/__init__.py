"""mitosis: predict multi-GPU training time from a one-GPU trace, from Python.

    import mitosis
    t = mitosis.load("traces/cpu-gpt-tiny-b8")
    r = mitosis.simulate(t, gpus=8, tp=2, topology="dgx-h100")
    r.step_ms, r.gpus                      # a float, a DataFrame
    mitosis.compare(t, gpus=8)             # every plan, ranked (a DataFrame)

A thin ctypes layer over libmitosis (include/mitosis.h): options are the long flags of
`mitosis simulate|compare --help` (underscores for dashes: link_bw="300GB/s", slow_gpu=["0:2"],
sp=True), checked by the same tables, so a misspelt one raises mitosis.Error with the CLI's
message. Results equal the CLI's --json. See docs/python.md.
"""

import ctypes
import html
import json
import os
import tempfile

from ._lib import ArgumentTypeError, ArgumentValueError, Error, call, int_arg, lib, text_arg

__all__ = ["Error", "ArgumentTypeError", "ArgumentValueError", "Trace", "Result", "load", "simulate", "compare", "sweep", "record", "cluster", "version"]
__version__ = "0.2.0"


def version():
    """The loaded libmitosis's version."""
    return lib().mitosis_version().decode()


def _b(s, what="a string argument"):
    return text_arg(what, s)


class Trace:
    """A loaded trace (read once; simulate it as often as you like). Attributes: the summary of
    `mitosis inspect --json` (format, device, batch_size, layers, time_ms, ...; the op count as
    n_ops), .summary (that dict), .ops (a DataFrame, one row per operator), .path."""

    def __init__(self, path, step=-1):
        if isinstance(path, (str, bytes, os.PathLike)):
            paths = [path]
        elif isinstance(path, (list, tuple)):
            paths = list(path)
        else:
            raise ArgumentTypeError("mitosis.load: path must be a trace folder or file (a str or os.PathLike), or a "
                                    "list of them (got %s)" % type(path).__name__)
        if not 1 <= len(paths) <= 8:
            raise ArgumentValueError("mitosis.load: give 1 to 8 paths, a folder or its files (got %d)" % len(paths))
        raw = [_b(p, "mitosis.load: path %d" % k) for k, p in enumerate(paths)]
        self.paths = [os.fsdecode(b) for b in raw]
        self.path = self.paths[0]
        step = int_arg("mitosis.load: step", step, -1)
        arr = (ctypes.c_char_p * len(raw))(*raw)
        h = ctypes.c_void_p()
        call(lib().mitosis_trace_open, arr, len(raw), step, ctypes.byref(h))
        self._h = h
        self.summary = self._json(0)
        for k, v in self.summary.items():
            setattr(self, "n_ops" if k == "ops" else k, v)
        self._ops = None

    def _json(self, ops):
        p = lib().mitosis_trace_json(self._h, ops)
        if not p:
            raise Error("out of memory", "out of memory", 2)
        try:
            return json.loads(ctypes.string_at(p).decode())
        finally:
            lib().mitosis_string_free(p)

    @property
    def ops(self):
        if self._ops is None:
            import pandas as pd
            self._ops = pd.DataFrame(self._json(1)["op_list"])
        return self._ops

    def __del__(self):
        h, self._h = getattr(self, "_h", None), None
        if h and lib:
            lib().mitosis_trace_free(h)

    def __repr__(self):
        return "<mitosis.Trace %s: %s, batch %s, %s ops, %s layers>" % (
            self.path, self.summary.get("format"), self.summary.get("batch_size"), self.summary.get("ops"),
            self.summary.get("layers"))


def _trace(t):
    return t if isinstance(t, Trace) else Trace(t)


def _value(name, x):
    """One option value as the CLI's word: True a switch (None), False "false", numbers and strings as
    written; anything else (None inside a list, a dict, a nested list...) refused."""
    if x is True:
        return None
    if x is False:
        return "false"
    if isinstance(x, (int, float)):
        return str(x)
    if isinstance(x, (str, bytes, os.PathLike)):
        return x
    raise ArgumentTypeError("option %s takes a string, a number or True/False (got %s)" % (name, type(x).__name__))


def _words(options):
    """Keyword options as (flag, values): True a switch, False left out, a list or tuple several values
    (each a value of a repeatable option)."""
    for k, v in options.items():
        if v is None:
            continue
        name = k.replace("_", "-")
        many = isinstance(v, (list, tuple))
        yield name, [_value(name, x) for x in (v if many else [v])], many


class _Config:
    def __init__(self, command, options):
        h = ctypes.c_void_p()
        call(lib().mitosis_config_new, _b(command), ctypes.byref(h))
        self._h = h
        for name, values, many in _words(options):
            flag = _b("--" + name if not name.startswith("--") else name, "an option's name")
            for value in values:
                call(lib().mitosis_config_set, h, flag, _b(value, "option %s" % name) if value is not None else None)
            # a list where one value goes: the library kept only the last (a non-repeatable option replaces)
            if many and len(values) > 1 and self._count(flag) < len(values):
                raise ArgumentTypeError("option %s takes one value, not a list (got %d values)" % (name, len(values)))

    def _count(self, flag):
        n = lib().mitosis_config_words(self._h)
        return sum(lib().mitosis_config_word(self._h, i) == flag for i in range(n))

    def __del__(self):
        h, self._h = getattr(self, "_h", None), None
        if h and lib:
            lib().mitosis_config_free(h)


def _df(rows):
    import pandas as pd
    return pd.DataFrame(rows or [])


class Result:
    """One simulation: .step_ms (.base_step_ms: unperturbed, with a what-if), .json (the dict `mitosis simulate --json` prints), .to_json()
    (its text), .gpus / .layers / .stages / .links DataFrames, .warnings, and one method per output
    of the simulate command (.timeline(path), .html(path), .csv(dir), .chakra(dir), .kineto(dir):
    libmitosis's output table); shown in Jupyter as an HTML summary."""

    _outputs_added = False

    def __init__(self, trace, config, handle):
        Result._add_outputs()
        self.trace, self._config, self._h = trace, config, handle
        self._text = lib().mitosis_result_json(handle).decode()
        self.json = json.loads(self._text)
        self.step_ms = lib().mitosis_result_step_ms(handle)
        # with a what-if (slow_gpu, slow_link, scenario...): the same plan unperturbed, else None
        self.base_step_ms = lib().mitosis_result_base_step_ms(handle) or None
        self.warnings = [lib().mitosis_result_warning(handle, i).decode()
                         for i in range(lib().mitosis_result_warnings(handle))]
        self.plan = self.json.get("plan", {})
        self._links = None

    def __del__(self):
        h, self._h = getattr(self, "_h", None), None
        if h and lib:
            lib().mitosis_result_free(h)

    def to_json(self):
        return self._text

    @property
    def gpus(self):
        return _df(self.json.get("gpus"))

    @property
    def layers(self):
        return _df(self.json.get("layers"))

    @property
    def stages(self):
        return _df(self.json.get("stages"))

    @property
    def peak_mem_bytes(self):
        return max((g.get("peak_mem_bytes", 0) for g in self.json.get("gpus", [])), default=0)

    @property
    def links(self):
        """Per-link load (links.csv of `simulate --csv`; the run is simulated again with a recorder)."""
        if self._links is None:
            import pandas as pd
            with tempfile.TemporaryDirectory(prefix="mitosis-links-") as d:
                self._write("csv", d)
                self._links = pd.read_csv(os.path.join(d, "links.csv"))
        return self._links

    def _write(self, what, path):
        call(lib().mitosis_result_write, self._h, _b(what), _b(path, "the %s's path" % what))
        return path

    @classmethod
    def _add_outputs(cls):
        """One method per output of libmitosis's table (run/outputs.h: timeline, csv, html, chakra,
        kineto...): result.NAME(path) writes what `mitosis simulate --NAME path` writes, returns path."""
        if cls._outputs_added:
            return
        for i in range(lib().mitosis_outputs()):
            name = lib().mitosis_output_name(i).decode()

            def write(self, path, _name=name):
                return self._write(_name, path)
            write.__name__ = name
            write.__doc__ = "%s (simulate --%s %s); returns path." % (
                lib().mitosis_output_help(i).decode(), name, "DIR" if lib().mitosis_output_is_dir(i) else "FILE")
            setattr(cls, name, write)
        cls._outputs_added = True

    def __repr__(self):
        p = self.plan
        return "<mitosis.Result %s GPUs (dp %s x tp %s x pp %s) on %s: step %.3f ms, %.2f GB/GPU>" % (
            p.get("gpus"), p.get("dp"), p.get("tp"), p.get("pp"), self.json.get("topology"), self.step_ms,
            self.peak_mem_bytes / 1e9)

    def _repr_html_(self):
        p, j = self.plan, self.json
        rows = [("step time", "%.3f ms" % self.step_ms),
                ("plan", "%s GPUs = dp %s x tp %s x pp %s (%s, %s)" % (p.get("gpus"), p.get("dp"), p.get("tp"),
                                                                      p.get("pp"), p.get("dp_mode"),
                                                                      p.get("schedule"))),
                ("samples/s", "%.1f" % j["samples_per_s"] if j.get("samples_per_s") else "n/a"),
                ("peak memory / GPU", "%.3f GB" % (self.peak_mem_bytes / 1e9)),
                ("network", "%s on %s" % (j.get("network"), j.get("topology"))),
                ("op times", j.get("op_times"))] + [("warning", w) for w in self.warnings]
        head = "".join("<tr><th style='text-align:left'>%s</th><td style='text-align:left'>%s</td></tr>"
                       % (html.escape(str(a)), html.escape(str(b))) for a, b in rows)
        g = self.gpus
        cols = [c for c in ("rank", "compute_ms", "stretch_ms", "exposed_comm_ms", "peer_wait_ms", "bubble_ms", "idle_ms",
                            "peak_mem_bytes") if c in g.columns]
        return "<b>mitosis simulate</b><table>%s</table>%s" % (head, g[cols].head(16).to_html(index=False))


def simulate(trace, gpus=None, tp=None, pp=None, topology=None, **options):
    """`mitosis simulate` in this process: trace (a Trace or a path), options as the CLI's long
    flags (dp=4, strategy="ddp", link_bw="300GB/s", target_gpu="H100-SXM", slow_gpu=["3:2"],
    dist_opt=True, ...). Returns a Result; raises mitosis.Error with the CLI's message."""
    t = _trace(trace)
    cfg = _Config("simulate", dict(gpus=gpus, tp=tp, pp=pp, topology=topology, **options))
    h = ctypes.c_void_p()
    call(lib().mitosis_simulate, t._h, cfg._h, ctypes.byref(h))
    return Result(t, cfg, h)


def _comparison(trace, options):
    t = _trace(trace)
    cfg = _Config("compare", options)
    h = ctypes.c_void_p()
    call(lib().mitosis_compare, t._h, cfg._h, ctypes.byref(h))
    try:
        return lib().mitosis_comparison_json(h).decode()
    finally:
        lib().mitosis_comparison_free(h)


def _flat(row):
    out = {k: v for k, v in row.items() if k != "plan"}
    for k, v in (row.get("plan") or {}).items():
        out.setdefault(k, v)
    return out


def compare(trace, gpus=None, **options):
    """`mitosis compare`: every plan for `gpus` GPUs (plans="auto" or a list "ddp=8,tp=2:ddp=4"),
    or one plan under sweep="NAME=VALUES" (link-bw, nic-bw, gpus, batch). Returns the rows as a
    DataFrame (ranked fastest first; a sweep in its order), plan fields as columns; .attrs["json"]
    holds the CLI's --json dict (the skipped plans and their reasons under "skipped"). A search of
    every plan keeps its first 10 rows exact and prunes plans that cannot reach them, as the CLI
    does: .attrs["pruned"] lists them with their bound (top=K, or exhaustive=True to run all)."""
    text = _comparison(trace, dict(gpus=gpus, **options))
    j = json.loads(text)
    df = _df([_flat(r) for r in j.get("rows", [])])
    df.attrs["json"] = j
    df.attrs["skipped"] = j.get("skipped", [])
    df.attrs["pruned"] = j.get("pruned", [])
    return df


def _topology_for(spec, opts, gpus_per_node):
    """spec with {gpus} and {nodes} filled for the run opts describes, by libmitosis as compare's rows
    (the GPU count: gpus=, else dp x tp x pp)."""
    def size(k):  # an option's count as given (8 or "8"), 0 when not given
        v = opts.get(k) or 0
        return int(v) if isinstance(v, str) and v.strip().isdigit() else v
    n = size("gpus")
    if not n:
        n = 1
        for k in ("dp", "tp", "pp"):
            n *= size(k) or 1
    h = ctypes.c_void_p()
    call(lib().mitosis_topology_fill, _b(spec, "mitosis.sweep: topology"), int_arg("mitosis.sweep: gpus", n),
         int_arg("mitosis.sweep: gpus_per_node", gpus_per_node), ctypes.byref(h))
    try:
        return ctypes.string_at(h).decode()
    finally:
        lib().mitosis_string_free(h)


def sweep(trace, name, values, topology=None, gpus_per_node=8, **options):
    """Simulates one plan once per value of option `name` (e.g. "gpus", [8, 16, ..., 1024]) in
    this process (the trace loaded once) and returns a DataFrame: the value, the resolved plan,
    step_ms, samples_per_s, peak_mem_bytes (largest per GPU), exposed_comm_ms (max over GPUs).
    In topology, {gpus} and {nodes} (= gpus / gpus_per_node) are replaced for each run by the
    library, as compare's --sweep does: "multinode:nodes={nodes},gpus=8" (a GPU count that does not
    fill whole nodes is refused with compare's message)."""
    if not isinstance(name, str):
        raise ArgumentTypeError("mitosis.sweep: name must be an option's name, a string (got %s)" % type(name).__name__)
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise ArgumentTypeError("mitosis.sweep: values must be a list of the option's values (got %s)"
                                % type(values).__name__)
    t = _trace(trace)
    rows = []
    for v in values:
        opts = dict(options)
        opts[name] = v
        topo = _topology_for(topology, opts, gpus_per_node) if topology is not None else None
        if topo is not None:
            opts["gpus_per_node"] = gpus_per_node
        r = simulate(t, topology=topo, **opts)
        g = r.json.get("gpus", [])
        rows.append({name: v, "gpus": r.plan.get("gpus"), "dp": r.plan.get("dp"), "tp": r.plan.get("tp"),
                     "pp": r.plan.get("pp"), "step_ms": r.step_ms, "samples_per_s": r.json.get("samples_per_s"),
                     "peak_mem_bytes": r.peak_mem_bytes,
                     "exposed_comm_ms": max((x.get("exposed_comm_ms", 0) for x in g), default=0)})
    return _df(rows)


def cluster(path, placement=None):
    """`mitosis cluster FILE` (docs/cluster.md): several jobs placed on one fabric, simulated together
    and alone. Returns a DataFrame, a row per job (name, gpus, placement, placed_on, alone_ms,
    together_ms, slowdown, exposed_ms, peer_wait_ms, shared_bytes, ...); .attrs["json"] holds the
    CLI's --json dict (shared links, makespan, worst slowdown). placement: a policy (packed, spread,
    random[:SEED], rail-aligned) for every job the file places by a policy."""
    h = ctypes.c_void_p()
    call(lib().mitosis_cluster, _b(path, "mitosis.cluster: path"),
         _b(placement, "mitosis.cluster: placement") if placement is not None else None, ctypes.byref(h))
    try:
        j = json.loads(ctypes.string_at(h).decode())
    finally:
        lib().mitosis_string_free(h)
    rows = [{k: v for k, v in job.items() if k not in ("plan", "shared_links")} for job in j["jobs"]]
    df = _df(rows)
    df.attrs["json"] = j
    return df


def load(path, step=-1):
    """Loads a trace (a folder, or its files) as `mitosis inspect` reads it; step -1: the ET's."""
    return Trace(path, step)


def record(model, batch_fn, **kw):
    """Records one training step of your model (see mitosis._record.record) and loads it."""
    from ._record import record as _rec
    return _rec(model, batch_fn, **kw)
