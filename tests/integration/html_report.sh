#!/usr/bin/env bash
# Integration: the HTML reports of `simulate --html`, `compare --html` and `compare --sweep
# --html` on this project's traces. Static checks always: one file, no http(s):// reference,
# no src=/href= (nothing external), the sections' ids, text escaped (a trace folder named
# with <, >, & and quotes). Then, when Debian's Chromium is installed, the pages are rendered
# headless: the DOM (after the script ran) has the summary table, a per-GPU bar per GPU and
# part, a Gantt with span rects and a drawn time axis; a screenshot is written. Without
# Chromium it exits 77 (skipped) after the static checks. One browser run per page gives its DOM
# and its screenshot.
set -u
bin=$1
root=${MT_ROOT:-$(dirname "$0")/../..}
py=/usr/bin/python3
[ -x "$py" ] || py=python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
browser=""
for b in chromium chromium-browser headless_shell; do
    if command -v "$b" >/dev/null 2>&1; then browser=$(command -v "$b"); break; fi
done
"$py" - "$bin" "$root/traces" "$tmp" "$browser" <<'EOF'
import html.parser, os, re, shutil, subprocess, sys

bin_, own, tmp, browser = sys.argv[1:5]
failed = 0


def check(name, ok, detail=""):
    global failed
    print(("ok: " if ok else "FAIL: ") + name + ("" if ok else f": {detail}"))
    failed += not ok
    return ok


def run(*args):
    p = subprocess.run([bin_, *map(str, args)], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


# A trace folder whose name needs escaping: it is shown in the summary.
odd = os.path.join(tmp, "gpt <b>&\"x'")
shutil.copytree(os.path.join(own, "cpu-gpt-tiny-b8"), odd)
pages = {
    "simulate": ["simulate", odd, "--gpus", 8, "--dp", 2, "--tp", 2, "--pp", 2],
    "simulate-32": ["simulate", os.path.join(own, "cpu-resnet18-b8"), "--gpus", 32, "--dp", 16, "--pp", 2],
    "compare": ["compare", os.path.join(own, "cpu-resnet18-b8"), "--gpus", 4],
    "sweep": ["compare", os.path.join(own, "cpu-resnet18-b8"), "--gpus", 4, "--strategy", "dp",
              "--sweep", "link-bw=1GB/s:100GB/s:4"],
}
ids = {
    "simulate": ["summary", "gpu-bars", "layer-bars", "gantt"],
    "simulate-32": ["summary", "gpu-bars", "gantt"],
    "compare": ["summary", "plans", "compare-chart", "gpu-bars", "layer-bars", "gantt"],
    "sweep": ["summary", "sweep", "sweep-chart", "gpu-bars", "gantt"],
}
files = {}
for name, args in pages.items():
    path = os.path.join(tmp, f"{name}.html")
    rc, out, err = run(*args, "--html", path)
    if not check(f"{name}: --html exits 0 and writes the file", rc == 0 and os.path.getsize(path) > 1000,
                 f"exit {rc}: {err.strip()}"):
        continue
    files[name] = path
    text = open(path, encoding="utf-8").read()
    check(f"{name}: no http:// or https:// anywhere", not re.search(r"https?://", text, re.I),
          re.findall(r".{20}https?://.{20}", text)[:3])
    check(f"{name}: no src= or href= (nothing loaded from outside)", not re.search(r"\s(src|href)\s*=", text, re.I))
    check(f"{name}: one document with its own style and script",
          text.count("<html") == 1 and "<style>" in text and "<script>" in text)
    missing = [i for i in ids[name] if f'id="{i}"' not in text]
    check(f"{name}: sections {ids[name]}", not missing, missing)
    if name == "simulate":
        check("simulate: the folder name is escaped in the summary",
              "gpt &lt;b&gt;&amp;&quot;x&#39;" in text and "<b>&" not in text, re.findall(r"gpt .{0,40}", text)[:2])
    if name == "simulate-32":
        check("simulate-32: the page says only 16 of 32 GPUs are drawn in the timeline",
              "Only 16 of the run's 32 GPUs are drawn" in text, re.findall(r"Only.{0,80}", text))



class Table(html.parser.HTMLParser):
    """The header and the rows (cell texts) of the table with id `tid`."""

    def __init__(self, tid):
        super().__init__()
        self.tid, self.on, self.cell, self.head, self.rows = tid, False, None, [], []

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.on = dict(attrs).get("id") == self.tid
        elif self.on and tag == "tr":
            self.rows.append([])
        elif self.on and tag in ("td", "th"):
            self.cell = ""

    def handle_endtag(self, tag):
        if tag == "table":
            self.on = False
        elif self.on and tag in ("td", "th") and self.cell is not None:
            (self.head if tag == "th" else self.rows[-1]).append(self.cell.strip())
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


# The compare table carries the JSON's numbers, column by column (a mutation of any column of the
# HTML table, e.g. the bubble doubled, fails here). Pipelined plans give non-zero bubbles.
import json
for name, args in (("compare", pages["compare"] + ["--pp", 2]), ("sweep", pages["sweep"])):
    hpath = os.path.join(tmp, f"{name}-vs-json.html")
    rc, out, err = run(*args, "--json", "--html", hpath)
    if not check(f"{name} --json --html exits 0", rc == 0, err.strip()):
        continue
    d = json.loads(out)
    t = Table("plans" if name == "compare" else "sweep")
    t.feed(open(hpath, encoding="utf-8").read())
    rows = [dict(zip(t.head, r)) for r in t.rows if len(r) == len(t.head) and r[1 if name == "compare" else 0] != "-"]
    ran = d["rows"]
    check(f"{name}: one HTML row per ranked JSON row", len(rows) == len(ran), (len(rows), len(ran)))
    fields = (("step ms", "step_ms", 1, 3), ("speed-up", "speedup", 1, 2), ("exposed comm ms", "exposed_comm_ms", 1, 3),
              ("host wait ms", "host_wait_ms", 1, 3), ("bubble ms", "bubble_ms", 1, 3),
              ("peak mem GB", "peak_mem_bytes", 1e-9, 2))
    bad = [(h, r.get(h), j[k]) for r, j in zip(rows, ran) for h, k, scale, digits in fields
           if r.get(h) != f"{j[k] * scale:.{digits}f}"]
    check(f"{name}: HTML table columns == JSON rows {[f[0] for f in fields]}", rows and not bad, bad[:4])
    if name == "compare":
        check("compare --pp 2: some plan has a bubble (the bubble column is exercised)",
              any(j["bubble_ms"] > 0 for j in ran), [j["bubble_ms"] for j in ran])
        labels = [r.get("plan") for r in rows]
        check("compare: HTML plan labels in the JSON's order", labels == [j["label"] for j in ran], labels)
        spans = {r[1]: r[2] for r in t.rows if len(r) == 3}  # '-', label, 'skipped: why' or 'pruned: why'
        check("compare: every pruned plan's HTML row says pruned, with the JSON's reason",
              d.get("pruned") and all(spans.get(x["label"]) == "pruned: " + x["reason"] for x in d["pruned"])
              and all(spans.get(x["label"]) == "skipped: " + x["reason"] for x in d["skipped"]),
              (len(d.get("pruned", [])), list(spans.items())[:2]))

rc, out, err = run("simulate", os.path.join(own, "cpu-resnet18-b8"), "--gpus", 2, "--html", os.path.join(tmp, "no/such/dir.html"))
check("unwritable --html: exit 2, one line naming the file",
      rc == 2 and len(err.splitlines()) == 1 and "no/such/dir.html" in err, (rc, err))

if failed:
    print(f"{failed} failed checks")
    sys.exit(1)
if not browser:
    print("SKIP: no chromium, chromium-browser or headless_shell installed (apt-get install chromium); "
          "the static checks passed, the rendering checks did not run")
    sys.exit(77)


class Dom(html.parser.HTMLParser):
    """Counts of tags inside each element with an id (e.g. rects inside #gantt-plot), and text."""
    VOID = {"meta", "br", "hr", "img", "input", "link", "area", "base", "col", "embed", "source", "track", "wbr"}

    def __init__(self):
        super().__init__()
        self.stack, self.ids, self.inside, self.text = [], set(), {}, {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        for _, i in self.stack + [(tag, a.get("id"))]:
            if i:
                self.inside[(i, tag)] = self.inside.get((i, tag), 0) + 1
        if tag not in self.VOID:
            self.stack.append((tag, a.get("id")))

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in self.VOID:
            self.stack.pop()

    def handle_endtag(self, tag):
        while self.stack and self.stack.pop()[0] != tag:
            pass

    def handle_data(self, data):
        for _, i in self.stack:
            if i:
                self.text[i] = self.text.get(i, "") + data


flags = ["--headless", "--disable-gpu", "--no-sandbox", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp}/profile"]
# One browser per page: the DOM after the script ran (--dump-dom, on stdout) and a screenshot of the
# same load (the page's drawing does not depend on the window's size).
for name, path in files.items():
    url = "file://" + path
    png = os.path.join(tmp, f"{name}.png")
    p = subprocess.run([browser, *flags, "--window-size=1400,2000", f"--screenshot={png}", "--dump-dom", url],
                       capture_output=True, text=True, timeout=120)
    check(f"{name}: screenshot", p.returncode == 0 and os.path.exists(png) and os.path.getsize(png) > 10000,
          p.stderr[-400:])
    if not check(f"{name}: chromium --dump-dom", p.returncode == 0 and "<body" in p.stdout, p.stderr[-400:]):
        continue
    d = Dom()
    d.feed(p.stdout)
    missing = [i for i in ids[name] if i not in d.ids]
    check(f"{name}: rendered DOM has {ids[name]}", not missing, missing)
    check(f"{name}: summary table has rows", d.inside.get(("summary", "tr"), 0) >= 5, d.inside.get(("summary", "tr")))
    gantt = d.inside.get(("gantt-plot", "rect"), 0)
    check(f"{name}: gantt has span rects", gantt > 0, gantt)
    check(f"{name}: the script drew the time axis (ticks in #gantt-axis) and the range line",
          d.inside.get(("gantt-axis", "text"), 0) >= 3 and "showing 0.000 to" in d.text.get("gantt-range", ""),
          (d.inside.get(("gantt-axis", "text")), d.text.get("gantt-range")))
    bars = d.inside.get(("gpu-bars", "rect"), 0)
    ngpu = {"simulate": 8, "simulate-32": 32, "compare": 4, "sweep": 4}[name]
    check(f"{name}: 7 bars per GPU: compute, stretch, host wait, exposed, peer wait, bubble, idle (+7 legend)",
          bars == 7 * ngpu + 7, bars)
    if name == "compare":
        t = Table("plans")
        t.feed(p.stdout)
        ranked = sum(len(r) == len(t.head) for r in t.rows[1:])  # skipped and pruned rows span the columns
        check("compare: one bar per ranked plan", ranked and d.inside.get(("compare-chart", "rect"), 0) - 2 == ranked,
              (d.inside.get(("compare-chart", "rect")), ranked))
    if name == "sweep":
        check("sweep: 4 points on the line", d.inside.get(("sweep-chart", "circle"), 0) == 4,
              d.inside.get(("sweep-chart", "circle")))
print(f"{failed} failed checks")
sys.exit(1 if failed else 0)
EOF
