#!/usr/bin/env python3
"""The docs' examples, run: every `$ mitosis ...` line in a fenced block of README.md and docs/*.md
is run from the repository root against the build's mitosis, and the output shown under it is
checked against what it prints.

Convention (docs/layout.md, "Examples in the docs"):
  - in a fenced block, a line starting with `$ mitosis ` is a runnable example (continued by a
    trailing backslash); `$ NAME=...` lines before it in the block are shell settings it runs
    after; its shown output is the lines up to the next `$ ` line or the end of the block (other
    `$ ` lines are prose: neither run nor checked);
  - a line of `...` or starting with `…` in the shown output stands for lines left out; a
    `  # comment` after a shown line (two spaces, then #) is the doc's, not the program's;
  - a shown line must equal a printed line but for its numbers and spacing, each number within
    TOLERANCE of the printed one: 0.5 % relative, or one unit in the last digit shown (3.557 ms
    shown for 3.5574 printed passes; 9.22 GB shown for 10.84 printed fails); a shown line ending
    in `...` matches a printed line that starts with it;
  - an example whose command line ends with `# slow` (seconds in a Release build, minutes under
    ASan) runs only with MT_DOCTEST_SLOW=1; with MT_DOCTEST_FIRST=1 (doctest.sh sets it for a
    sanitizer build, whose numbers are the Release build's) only each file's first example runs; `# not run` marks one that cannot run in a clone
    (a placeholder, a file the reader brings).
Prints one line per example; exits 1 when any shown line is not printed, naming file and line.
"""
import os
import re
import subprocess
import sys
import time

NUM = re.compile(r"[-+]?\d+(?:,\d{3})*(?:\.\d+)?(?:[eE][-+]?\d+)?")
TOL = 0.005


def examples(path):
    """(line number, settings, command, shown lines, flags) of each `$ mitosis` in path's fences."""
    out, fence, settings = [], False, []
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        if lines[i].lstrip().startswith("```"):  # a fence, maybe indented (in a list item)
            fence, settings = not fence, []
            if fence:
                ind = len(lines[i]) - len(lines[i].lstrip())
                j = i + 1
                while j < len(lines) and not lines[j].lstrip().startswith("```"):
                    lines[j] = lines[j][ind:] if lines[j][:ind].strip() == "" else lines[j]
                    j += 1
            i += 1
            continue
        ln = lines[i]
        if not fence or not ln.startswith("$ "):
            i += 1
            continue
        start, cmd = i + 1, ln[2:]
        while cmd.endswith("\\") and i + 1 < len(lines):
            i += 1
            cmd = cmd[:-1] + lines[i]  # bash drops backslash-newline, keeps the indent as a space
        i += 1
        if not cmd.startswith("mitosis "):
            if re.match(r"[A-Za-z_][A-Za-z0-9_]*=\S", cmd):
                settings.append(cmd)
            continue
        shown = []
        while i < len(lines) and not lines[i].startswith("$ ") and not lines[i].lstrip().startswith("```"):
            shown.append((i + 1, lines[i]))
            i += 1
        note = re.search(r"\s#\s*(slow|not run)\s*$", cmd)
        out.append((start, list(settings), cmd, shown, note.group(1) if note else None))
    return out


def skeleton(s):
    return " ".join(NUM.sub("#", s).split())


def numbers(s):
    return [m.group(0) for m in NUM.finditer(s)]


def close(shown, got):
    a, b = float(shown.replace(",", "")), float(got.replace(",", ""))
    digits = len(shown.split(".")[1]) if "." in shown and "e" not in shown.lower() else 0
    return abs(a - b) <= max(TOL * abs(b), 10.0 ** -digits * 1.0001)


def matches(shown, printed):
    prefix = shown.rstrip().endswith("...")
    want = skeleton(shown.rstrip().rstrip(".").rstrip("…"))
    nums = numbers(shown.rstrip().rstrip("."))
    for p in printed:
        sk = skeleton(p)
        if not (sk.startswith(want) if prefix else sk == want):
            continue
        got = numbers(p)
        if all(close(x, y) for x, y in zip(nums, got)):
            return True
    return False


def strip_note(line):
    body = line.lstrip()
    if body.startswith("#"):
        return line
    return re.sub(r"\s{2,}#\s.*$", "", line)


def main():
    binary, root = os.path.abspath(sys.argv[1]), sys.argv[2]
    files = [os.path.join(root, "README.md")] + sorted(
        os.path.join(root, "docs", f) for f in os.listdir(os.path.join(root, "docs")) if f.endswith(".md"))
    slow = os.environ.get("MT_DOCTEST_SLOW") == "1"
    first_only = os.environ.get("MT_DOCTEST_FIRST") == "1"  # a sanitizer build: each file's first example
    bad = ran = 0
    shim = os.path.join(os.environ.get("TMPDIR", "/tmp"), "mt-doctest-%d" % os.getpid())
    os.makedirs(shim, exist_ok=True)
    os.symlink(binary, os.path.join(shim, "mitosis"))
    env = dict(os.environ, PATH=shim + os.pathsep + os.environ.get("PATH", ""))
    try:
        for f in files:
            rel = os.path.relpath(f, root)
            done = False
            for line, settings, cmd, shown, note in examples(f):
                if note == "not run" or (note == "slow" and not slow) or (first_only and done):
                    note = note or "not the file's first"
                    print("skip  %s:%d (%s) %s" % (rel, line, note, cmd[:70]))
                    continue
                done = True
                t0 = time.time()
                p = subprocess.run(["bash", "-c", "\n".join(settings + [cmd]) + " 2>&1"], cwd=root, env=env,
                                   stdout=subprocess.PIPE, text=True, errors="replace")
                printed = p.stdout.split("\n")
                ran += 1
                missing = [(n, s) for n, s in shown
                           if s.strip() and s.strip() not in ("...", "…") and not s.strip().startswith("…")
                           and not matches(strip_note(s), printed)]
                print("%s %s:%d %.1fs %s" % ("FAIL" if missing else "ok  ", rel, line, time.time() - t0, cmd[:70]))
                for n, s in missing[:3]:
                    print("    %s:%d shown, not printed: %s" % (rel, n, s.strip()[:150]))
                bad += bool(missing)
    finally:
        os.unlink(os.path.join(shim, "mitosis"))
        os.rmdir(shim)
    print("doctest: %d examples run, %d wrong" % (ran, bad))
    return 1 if bad or not ran else 0


if __name__ == "__main__":
    sys.exit(main())
