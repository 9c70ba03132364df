"""The Python package over libmitosis (python/mitosis): its answers are the CLI's.

Run by tests/integration/python_api.sh (ctest integration.python_api) with MITOSIS_LIB,
MITOSIS_BIN and MT_ROOT set. Each check compares against the `mitosis` binary run on the same
input -- two front-ends over run/, so a difference is a bug in the library or the binding."""

import json
import math
import os
import subprocess
import sys
import threading

import pytest

import mitosis

ROOT = os.environ.get("MT_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ["MITOSIS_BIN"]
GPT = os.path.join(ROOT, "traces", "cpu-gpt-tiny-b8")
DLRM = os.path.join(ROOT, "traces", "cpu-dlrm-tiny-b8")
TRIOSIM = os.path.join(ROOT, "traces", "triosim-csv-vgg13-h100-bs128")
SANITIZED = os.environ.get("MT_ASAN") == "1"


def cli(*args, ok=True):
    p = subprocess.run([BIN, *args], capture_output=True, text=True)
    if ok:
        assert p.returncode == 0, p.stderr
    return p


def untimed(text):
    """The JSON without what depends on the host's speed (wall time, resident memory)."""
    j = json.loads(text)
    j.pop("wall_s", None)
    for k in ("wall_s", "peak_rss_bytes"):
        j.get("simulation", {}).pop(k, None)
    return j


@pytest.fixture(scope="module")
def gpt():
    return mitosis.load(GPT)


SIM_CASES = [
    (GPT, dict(gpus=8, tp=2)),
    (GPT, dict(gpus=16, pp=2, micro_batches=4, schedule="gpipe", topology="multinode:nodes=2,gpus=8")),
    (GPT, dict(gpus=8, tp=2, sp=True, slow_gpu=["3:2"], target_gpu="H100-SXM")),
    (GPT, dict(gpus=2, cp=2, seq=256)),
    (DLRM, dict(gpus=4, embedding_shard="table")),
    (TRIOSIM, dict(gpus=8, link_bw="300GB/s")),
]


def args_of(opts):
    out = []
    for k, v in opts.items():
        for x in (v if isinstance(v, list) else [v]):
            out += ["--" + k.replace("_", "-")] + ([] if x is True else [str(x)])
    return out


@pytest.mark.parametrize("path,opts", SIM_CASES)
def test_simulate_equals_cli_json(path, opts):
    if not os.path.isdir(path):
        pytest.skip("no %s" % path)
    r = mitosis.simulate(path, **opts)
    want = cli("simulate", path, *args_of(opts), "--json").stdout
    assert untimed(r.to_json()) == untimed(want)
    assert r.step_ms == pytest.approx(json.loads(want)["step_ms"], rel=1e-9)
    assert len(r.gpus) == json.loads(want)["plan"]["gpus"] or len(r.gpus) > 0


@pytest.mark.parametrize("opts", [dict(gpus=8), dict(gpus=8, exhaustive=True),
                                  dict(gpus=8, plans="ddp=8,ddp=4:tp=2,ddp=2:pp=4:mb=8", jobs=2),
                                  dict(tp=2, sweep="link-bw=100GB/s:400GB/s:3", gpus_per_node=4)])
def test_compare_equals_cli_json(gpt, opts):
    df = mitosis.compare(gpt, **opts)
    want = untimed(cli("compare", GPT, *args_of(opts), "--json").stdout)
    assert untimed(json.dumps(df.attrs["json"])) == want
    assert list(df["label"]) == [r["label"] for r in want["rows"]]
    assert df.attrs["pruned"] == want.get("pruned", [])
    if opts == dict(gpus=8):  # a search of every plan prunes what cannot reach its first 10 rows
        assert df.attrs["pruned"] and want["exact_rows"] == 10
    if "sweep" not in opts:  # ranked: fastest first
        assert list(df["speedup"]) == sorted(df["speedup"], reverse=True)


@pytest.mark.parametrize("opts,args", [
    (dict(gpus=8, tpp=2), ["--gpus", "8", "--tpp", "2"]),           # misspelt
    (dict(gpus=0), ["--gpus", "0"]),                                 # out of range
    (dict(gpus=8, algo="rung"), ["--gpus", "8", "--algo", "rung"]),  # not a choice
    (dict(gpus=8, sweep="gpus=8:16"), ["--gpus", "8", "--sweep", "gpus=8:16"]),  # compare's, not simulate's
    (dict(gpus=8, ports=4), ["--gpus", "8", "--ports", "4"]),        # applies to another network model
    (dict(gpus=6, tp=4), ["--gpus", "6", "--tp", "4"]),              # impossible plan
    (dict(gpus=2, cp=2, seq=130), ["--gpus", "2", "--cp", "2", "--seq", "130"]),  # ring attention cannot balance
])
def test_bad_options_raise_the_cli_message(gpt, opts, args):
    p = cli("simulate", GPT, *args, ok=False)
    assert p.returncode == 2
    line = p.stderr.strip()
    assert line.startswith("mitosis simulate: ") and "\n" not in line
    with pytest.raises(mitosis.Error) as e:
        mitosis.simulate(gpt, **opts)
    assert str(e.value) == line[len("mitosis simulate: "):]
    assert e.value.exit_code == 2


def test_compare_refusal_is_the_cli_message(gpt):
    p = cli("compare", GPT, "--gpus", "8", "--sweep", "gpus=8:16", ok=False)
    with pytest.raises(mitosis.Error) as e:
        mitosis.compare(gpt, gpus=8, sweep="gpus=8:16")
    assert str(e.value) == p.stderr.strip()[len("mitosis compare: "):]


def test_two_threads_give_the_serial_results(gpt):
    """Different plans on one trace at once (each thread many times) equal the serial runs."""
    plans = [dict(gpus=8, tp=2), dict(gpus=16, pp=4, micro_batches=8, topology="multinode:nodes=2,gpus=8")]
    serial = [untimed(mitosis.simulate(gpt, **p).to_json()) for p in plans]
    got, errors = [[], []], []

    def work(k):
        try:
            for _ in range(2 if SANITIZED else 4):
                got[k].append(untimed(mitosis.simulate(gpt, **plans[k]).to_json()))
        except Exception as e:  # reported below: an exception in a thread fails nothing by itself
            errors.append(e)

    th = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    assert not errors
    for k in range(2):
        assert got[k] and all(g == serial[k] for g in got[k])
    assert serial[0] != serial[1]


def test_sweep_equals_single_runs(gpt):
    df = mitosis.sweep(gpt, "gpus", [8, 32], tp=2, topology="multinode:nodes={nodes},gpus=8")
    for n, ms in zip(df["gpus"], df["step_ms"]):
        want = json.loads(cli("simulate", GPT, "--gpus", str(n), "--tp", "2", "--gpus-per-node", "8",
                              "--topology", "multinode:nodes=%d,gpus=8" % (n // 8), "--json").stdout)
        assert ms == pytest.approx(want["step_ms"], rel=1e-9)  # the JSON has 10 digits


def test_sweep_refuses_partial_nodes_as_compare(gpt):
    """12 GPUs do not fill nodes of 8: compare --sweep skips the row with a reason; mitosis.sweep raises
    that reason (it used to round {nodes} down to 1 and fail on another message)."""
    j = json.loads(cli("compare", GPT, "--sweep", "gpus=8,12", "--topology", "multinode:nodes={nodes},gpus=8",
                       "--json").stdout)
    reason = [s["reason"] for s in j["skipped"]]
    assert len(reason) == 1 and "{nodes}" in reason[0], j["skipped"]
    with pytest.raises(mitosis.Error) as e:
        mitosis.sweep(gpt, "gpus", [8, 12], topology="multinode:nodes={nodes},gpus=8")
    assert str(e.value) == reason[0]


def test_trace_summary_is_inspect_json(gpt):
    want = json.loads(cli("inspect", GPT, "--json").stdout)
    assert gpt.summary == want
    assert gpt.batch_size == want["batch_size"] and gpt.n_ops == want["ops"]
    assert len(gpt.ops) == want["ops"]
    # every op's device time sums to the trace's busy time at most (a union is no longer than the sum)
    assert gpt.ops["device_ms"].sum() >= want["time_ms"]["device_busy"] - 1e-6


def test_files_of_a_result(gpt, tmp_path):
    r = mitosis.simulate(gpt, gpus=4, tp=2)
    tl = r.timeline(tmp_path / "t.json")
    ev = json.load(open(tl))["traceEvents"]
    assert any(e.get("ph") == "X" for e in ev)
    links = r.links
    assert {"src", "dst", "busy_ms"} <= set(links.columns) and len(links) > 0
    assert "<table>" in r._repr_html_() and "%.3f ms" % r.step_ms in r._repr_html_()
    with pytest.raises(mitosis.Error):
        r.timeline(tmp_path / "no" / "such" / "dir" / "t.json")


def test_python_m_mitosis_is_the_cli():
    p = subprocess.run([sys.executable, "-m", "mitosis", "--version"], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout == cli("--version").stdout
    p = subprocess.run([sys.executable, "-m", "mitosis", "simulate", GPT, "--gpus", "8", "--tpp", "2"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "unknown option '--tpp'" in p.stderr


def test_record_a_model(tmp_path):
    if SANITIZED:
        pytest.skip("PyTorch under LD_PRELOAD=libasan is not run here (a Release build runs this; the notebook test "
                    "records under ASan)")
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    t = mitosis.record(m, lambda: (torch.randn(16, 32), torch.randint(0, 10, (16,))), steps=2, warmup=1,
                       out=str(tmp_path / "rec"), name="mlp3")
    assert t.batch_size == 16
    assert set(t.ops["phase"]) >= {"forward", "backward"}
    meta = json.load(open(tmp_path / "rec" / "meta.json"))
    assert meta["model"] == "mlp3" and meta["step_time_ms"]["median"] > 0
    r = mitosis.simulate(t, gpus=4, target_gpu="H100-SXM")
    assert r.step_ms > 0 and r.json["ranks"] != "cpu_processes"


def test_pip_install_offline(tmp_path):
    """`pip install --no-build-isolation --no-index ./python` (Debian's pip and setuptools, no
    PyPI) gives a package that imports and runs outside the source tree."""
    if SANITIZED:
        pytest.skip("packaging, not memory: checked in a Release build (ASan adds a minute here)")
    import importlib.util
    for m in ("pip", "setuptools"):  # found, not imported (setuptools after distutils asserts)
        if importlib.util.find_spec(m) is None:
            pytest.skip("no %s (Debian: python3-%s)" % (m, m))
    src = tmp_path / "src"
    import shutil
    shutil.copytree(os.path.join(ROOT, "python"), src, symlinks=False,
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    p = subprocess.run([sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-index", "--quiet",
                        "--no-warn-script-location", "--target", str(tmp_path / "site"), str(src)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-2000:]
    # with no MITOSIS_LIB (issue 46.11: "cannot load libmitosis" unless set): the library the package carries
    code = ("import mitosis, sys; assert mitosis.__file__.startswith(sys.argv[1]), mitosis.__file__; "
            "import mitosis._collect; r = mitosis.simulate(sys.argv[2], gpus=4); print('%.6f' % r.step_ms); "
            "from mitosis import _lib; assert _lib.lib_path().startswith(sys.argv[1]), _lib.lib_path()")
    env = {k: v for k, v in os.environ.items() if k != "MITOSIS_LIB"}
    env["PYTHONPATH"] = str(tmp_path / "site")
    p = subprocess.run([sys.executable, "-c", code, str(tmp_path / "site"), GPT], capture_output=True, text=True,
                       env=env, cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr[-2000:]
    want = json.loads(cli("simulate", GPT, "--gpus", "4", "--json").stdout)["step_ms"]
    assert float(p.stdout) == pytest.approx(want, rel=1e-9)


def test_cluster_equals_cli():
    """mitosis.cluster = `mitosis cluster FILE --json` (issue 36), but for the wall time."""
    path = os.path.join(ROOT, "tests", "fixtures", "cluster", "two-jobs.json")
    for placement in (None, "spread"):
        df = mitosis.cluster(path, placement=placement)
        args = ["cluster", path, "--json"] + (["--placement", placement] if placement else [])
        want = json.loads(cli(*args).stdout)
        got = df.attrs["json"]
        for d in (want, got):
            d.pop("wall_s")
        assert got == want
        assert list(df["together_ms"]) == [j["together_ms"] for j in want["jobs"]]
    with pytest.raises(mitosis.Error) as e:
        mitosis.cluster(path, placement="sideways")
    assert str(e.value) == cli("cluster", path, "--placement", "sideways", ok=False).stderr.strip().split(": ", 1)[1]


# ---- misuse (issue 42): the library never crashes on NULL, Python never answers silently ----------

@pytest.mark.parametrize("call,kind,text", [
    (lambda t: mitosis.load(None), TypeError, "path must be a trace folder or file"),
    (lambda t: mitosis.load([]), ValueError, "give 1 to 8 paths"),
    (lambda t: mitosis.load(GPT + "\0junk"), ValueError, "holds a NUL byte"),
    (lambda t: mitosis.load(GPT, step=2**32 + 3), ValueError, "step must be an integer in -1..2147483647"),
    (lambda t: mitosis.load(GPT, step="3"), TypeError, "step must be an integer"),
    (lambda t: mitosis.simulate(t, gpus=[2, 4]), TypeError, "option gpus takes one value, not a list"),
    (lambda t: mitosis.simulate(t, gpus="8\0junk"), ValueError, "holds a NUL byte"),
    (lambda t: mitosis.simulate(t, gpus={"n": 8}), TypeError, "takes a string, a number or True/False"),
    (lambda t: mitosis.simulate(t, gpus=2**32 + 3), None, "--gpus needs an integer in 1..1048576 (got '4294967299')"),
    (lambda t: mitosis.simulate(None, gpus=2), TypeError, "path must be a trace folder or file"),
    (lambda t: mitosis.simulate(t, gpus=2, moe_pattern="*expert*"), None,
     "--moe-pattern: the experts are named when the trace is loaded"),
    (lambda t: mitosis.simulate(t, gpus=2, step=5), None, "--step 5: the step is chosen when the trace is loaded"),
    (lambda t: mitosis.cluster(None), TypeError, "mitosis.cluster: path must be a string"),
    (lambda t: mitosis.simulate(t, gpus=2).html(None), TypeError, "the html's path must be a string"),
    (lambda t: mitosis.sweep(t, 3, [2]), TypeError, "mitosis.sweep: name must be"),
    (lambda t: mitosis.sweep(t, "gpus", 8), TypeError, "mitosis.sweep: values must be a list"),
])
def test_python_misuse_raises_mitosis_error(gpt, call, kind, text):
    with pytest.raises(mitosis.Error) as e:
        call(gpt)
    assert text in str(e.value) and "\n" not in str(e.value)
    if kind:
        assert isinstance(e.value, kind)


def test_a_repeatable_option_takes_a_list(gpt):
    r = mitosis.simulate(gpt, gpus=4, slow_gpu=["1:2", "2:1.5"])
    want = json.loads(cli("simulate", GPT, "--gpus", "4", "--slow-gpu", "1:2", "--slow-gpu", "2:1.5", "--json").stdout)
    assert r.step_ms == pytest.approx(want["step_ms"], rel=1e-9)


def test_c_api_null_arguments(gpt):
    """The 14 entry points of issue 42 given NULL (in this process: a crash fails the test run)."""
    import ctypes
    from mitosis._lib import _Err
    L = mitosis._lib.lib()
    P = ctypes.c_void_p

    def err_of(fn, *args):
        e = _Err()
        rc = fn(*args, ctypes.byref(e))
        return rc, e.message.decode()

    arr = (ctypes.c_char_p * 1)(GPT.encode())
    cfg = P()
    assert L.mitosis_config_new(b"simulate", ctypes.byref(cfg), None) == 0
    try:
        cases = [
            (err_of(L.mitosis_trace_open, arr, 1, -1, None), "mitosis_trace_open: argument 'out' is NULL"),
            (err_of(L.mitosis_config_new, b"simulate", None), "mitosis_config_new: argument 'out' is NULL"),
            (err_of(L.mitosis_config_new, None, ctypes.byref(P())), "the command is \"simulate\" or \"compare\""),
            (err_of(L.mitosis_config_set, None, b"gpus", b"8"), "mitosis_config_set: argument 'c' is NULL"),
            (err_of(L.mitosis_config_unset, None, b"gpus"), "mitosis_config_unset: argument 'c' is NULL"),
            (err_of(L.mitosis_config_unset, cfg, None), "mitosis_config_unset: argument 'name' is NULL"),
            (err_of(L.mitosis_config_set_args, cfg, 2, None), "mitosis_config_set_args: argument 'argv' is NULL"),
            (err_of(L.mitosis_config_set_args, cfg, -1, None), "mitosis_config_set_args: argument 'argc' is below 0"),
            (err_of(L.mitosis_config_set_args, cfg, 1, (ctypes.c_char_p * 1)(None)),
             "mitosis_config_set_args: argument 'argv[0]' is NULL"),
            (err_of(L.mitosis_simulate, gpt._h, cfg, None), "mitosis_simulate: argument 'out' is NULL"),
            (err_of(L.mitosis_simulate, None, cfg, ctypes.byref(P())), "mitosis_simulate: argument 't' is NULL"),
            (err_of(L.mitosis_compare, gpt._h, None, ctypes.byref(P())), "mitosis_compare: argument 'c' is NULL"),
            (err_of(L.mitosis_compare, gpt._h, cfg, None), "mitosis_compare: argument 'out' is NULL"),
            (err_of(L.mitosis_result_write, None, b"html", b"x.html"), "mitosis_result_write: argument 'r' is NULL"),
            (err_of(L.mitosis_cluster, b"jobs.json", None, None), "mitosis_cluster: argument 'json' is NULL"),
            (err_of(L.mitosis_cluster, None, None, ctypes.byref(P())), "mitosis_cluster: argument 'file' is NULL"),
        ]
        for (rc, msg), want in cases:
            assert rc == 3 and want in msg, (rc, msg, want)
        assert L.mitosis_config_command(None) is None and L.mitosis_config_words(None) == -1
        assert L.mitosis_config_word(None, 0) is None and L.mitosis_trace_json(None, 0) is None
        assert L.mitosis_trace_ops(None) == -1 and L.mitosis_trace_batch(None) == -1
        assert L.mitosis_result_json(None) is None and L.mitosis_result_gpus(None) == -1
        assert math.isnan(L.mitosis_result_step_ms(None)) and math.isnan(L.mitosis_result_peak_mem_bytes(None))
        assert L.mitosis_result_warnings(None) == -1 and L.mitosis_result_warning(None, 0) is None
        assert L.mitosis_comparison_json(None) is None and L.mitosis_comparison_rows(None) == -1
        assert L.mitosis_comparison_label(None, 0) is None and L.mitosis_comparison_best(None) == -1
        assert math.isnan(L.mitosis_comparison_step_ms(None, 0))
        assert L.mitosis_config_words(cfg) == 0  # every refusal left the configuration as it was
    finally:
        L.mitosis_config_free(cfg)


def _doc_python_blocks():
    """(file:line, code) of every ```python block in README.md and docs/*.md that imports mitosis."""
    files = [os.path.join(ROOT, "README.md")] + sorted(
        os.path.join(ROOT, "docs", f) for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md"))
    out = []
    for path in files:
        lines = open(path, encoding="utf-8").read().split("\n")
        i = 0
        while i < len(lines):
            if lines[i].strip() == "```python":
                j = i + 1
                while j < len(lines) and not lines[j].strip().startswith("```"):
                    j += 1
                code = "\n".join(lines[i + 1:j])
                if "import mitosis" in code:
                    out.append(("%s:%d" % (os.path.relpath(path, ROOT), i + 2), code))
                i = j
            i += 1
    return out


@pytest.mark.parametrize("where,code", _doc_python_blocks(), ids=lambda x: x if ":" in str(x) else "")
def test_docs_python_examples(where, code):
    """The docs' Python examples run from the repository root, and a `print(...)  # shown` comment
    is printed, numbers within tests/integration/doctest.py's tolerance."""
    import importlib.util
    import re
    spec = importlib.util.spec_from_file_location(  # the docs' shell examples' matcher (not stdlib doctest)
        "mt_doctest", os.path.join(ROOT, "tests", "integration", "doctest.py"))
    mt_doctest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mt_doctest)
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))
    assert p.returncode == 0, "%s: %s" % (where, p.stderr[-2000:])
    printed = p.stdout.split("\n")
    for line in code.split("\n"):
        m = re.match(r"\s*print\(.*\)\s+#\s+(<.*>)\s*$", line)
        if m:
            assert mt_doctest.matches(m.group(1), printed), "%s: shown %r, printed %r" % (where, m.group(1), printed)
