"""Golden numbers: `simulate --json` and `compare --json` against outputs recorded before a
refactor (tests/fixtures/golden/). Each case in cases.json runs from the repository root; every
key of the recorded output must be in the new one with an equal value (numbers within 1e-9
relative, strings equal, arrays of equal length). Keys the new output adds are fine; keys
listed in IGNORE (host wall-clock times) are skipped.

  python3 golden.py BIN            check
  MT_GOLDEN_UPDATE=1 python3 ...   rewrite the recorded outputs whose values changed or that
                                   gained keys (only when numbers change on purpose: say why in
                                   the commit); host wall times alone never rewrite a file
A case without its recording fails (outside MT_GOLDEN_UPDATE). Cases on ../shared/traces are
skipped when it is absent; then, nothing else failing, the exit is 77 (skipped) for ctest.
"""
import json
import math
import os
import subprocess
import sys

IGNORE = {"wall_s", "peak_rss_bytes"}
REL = 1e-9


def diff(want, got, path, out):
    if isinstance(want, dict):
        if not isinstance(got, dict):
            out.append(f"{path}: want an object, got {type(got).__name__}")
            return
        for k, v in want.items():
            if k in IGNORE:
                continue
            if k not in got:
                out.append(f"{path}.{k}: missing")
                continue
            diff(v, got[k], f"{path}.{k}", out)
    elif isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            out.append(f"{path}: want a list of {len(want)}, got {got if not isinstance(got, list) else len(got)}")
            return
        for i, (a, b) in enumerate(zip(want, got)):
            diff(a, b, f"{path}[{i}]", out)
    elif isinstance(want, bool) or want is None or isinstance(want, str):
        if want != got:
            out.append(f"{path}: want {want!r}, got {got!r}")
    elif isinstance(want, (int, float)):
        if not isinstance(got, (int, float)) or isinstance(got, bool):
            out.append(f"{path}: want {want}, got {got!r}")
        elif not math.isclose(want, got, rel_tol=REL, abs_tol=1e-12):
            out.append(f"{path}: want {want!r}, got {got!r}")


def main():
    binary = sys.argv[1]
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.environ.get("MT_ROOT", os.path.dirname(os.path.dirname(here)))
    gdir = os.path.join(root, "tests", "fixtures", "golden")
    cases = json.load(open(os.path.join(gdir, "cases.json")))
    update = os.environ.get("MT_GOLDEN_UPDATE") == "1"
    have_shared = os.path.isdir(os.path.join(root, "..", "shared", "traces"))
    failed = ran = skipped = 0
    for c in cases:
        name, args = c["name"], c["args"]
        if any(a.startswith("../shared") for a in args) and not have_shared:
            skipped += 1
            continue
        p = subprocess.run([binary, *args], cwd=root, capture_output=True, text=True)
        ran += 1
        fixture = os.path.join(gdir, name + ".json")
        if p.returncode != 0:
            print(f"FAIL: {name}: exit {p.returncode}: {p.stderr.strip()}")
            failed += 1
            continue
        got = json.loads(p.stdout)
        want = json.load(open(fixture)) if os.path.exists(fixture) else None
        problems = []
        if want is not None:
            diff(want, got, name, problems)
        if update:  # only cases whose values changed (or new ones): wall times alone do not count
            if want is None or problems or any(k not in want for k in got):
                with open(fixture, "w") as f:
                    json.dump(got, f, indent=1, sort_keys=True)
                    f.write("\n")
                print(f"recorded: {name}")
            continue
        if want is None:
            failed += 1
            print(f"FAIL: {name}: no recording {fixture} (record it with MT_GOLDEN_UPDATE=1, saying why)")
        elif problems:
            failed += 1
            print(f"FAIL: {name}: {len(problems)} differences, first: " + "; ".join(problems[:5]))
        else:
            print(f"ok: {name}")
    print(f"{ran - failed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
    sys.exit(1 if failed else 77 if skipped else 0)


main()
