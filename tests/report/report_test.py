#!/usr/bin/env python3
"""report_test.py: the tests of rheaper flamegraph, timeline, export heaptrack and report.

    report_test.py STEP BIN_DIR SRC_DIR WORK_DIR

STEP is one ctest entry:
  setup       build known.c and workload.c with rheaper-cc, profile, convert
  flamegraph  folded weights per stack as known.c states them (all, leaked, peak),
              filters through `sel`, SVGs well-formed (xmllint) with their frames
  timeline    SVG well-formed; the drawn maximum equals the program's peak and
              rheaper summary's
  heaptrack   heaptrack_print reads the export and reports the allocation calls,
              peak and leaked bytes of rheaper summary (and of the program)
  html        the report opened in headless Chromium: no console message, no
              network request, chart and flamegraph drawn with a size; screenshot
Each program prints the facts it knows ("FOLDED ...", "FIGURE ..."); every
comparison is against those or against `rheaper summary --json`. Prints
"FAIL: ..." lines and exits 1 on failure, 77 when a needed tool is missing.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

STEP, BIN, SRC, WORK = sys.argv[1:5]
RHEAPER = os.path.join(BIN, "rheaper")
failures = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL: " + msg)


def check(cond, msg):
    if cond:
        print("ok: " + msg)
    else:
        fail(msg)


def run(args, expect=0, **kw):
    """Runs a command; returns (rc, stdout, stderr). A wrong exit status fails."""
    p = subprocess.run(args, capture_output=True, text=True, **kw)
    if expect is not None and p.returncode != expect:
        fail("%s exited %d (expected %d): %s" % (" ".join(args), p.returncode, expect,
                                               p.stderr.strip()[-500:]))
    return p.returncode, p.stdout, p.stderr


def facts(prog):
    """The FOLDED and FIGURE lines the program printed during setup."""
    folded, figures = [], {}
    with open(os.path.join(WORK, prog + ".out")) as f:
        for line in f:
            w = line.split()
            if w and w[0] == "FOLDED":
                folded.append((w[1], w[2], int(w[3])))
            elif w and w[0] == "FIGURE":
                figures[w[1]] = int(w[2])
    return folded, figures


def db(prog):
    return os.path.join(WORK, prog + ".db")


def summary(prog):
    rc, out, _ = run([RHEAPER, "summary", db(prog), "--json"])
    return json.loads(out) if rc == 0 else {}


def folded_map(text):
    """'a;b;c 12' lines -> {stack: weight}; every line must have that form."""
    m = {}
    for line in text.splitlines():
        stack, _, w = line.rpartition(" ")
        if not stack or not w.isdigit():
            fail("malformed folded line: %r" % line)
            continue
        m[stack] = m.get(stack, 0) + int(w)
    return m


def weight_of(m, suffix):
    """Sum of the weights of stacks that end with `suffix` (frames above main,
    such as __libc_start_call_main, vary with the libc and the link mode)."""
    return sum(w for s, w in m.items() if s == suffix or s.endswith(";" + suffix))


def xml_ok(path):
    rc, _, err = run(["xmllint", "--noout", path], expect=None)
    check(rc == 0, "%s is well-formed XML %s" % (os.path.basename(path), err.strip()[:300]))


def step_setup():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    for prog in ("known", "workload"):
        exe = os.path.join(WORK, prog)
        run([os.path.join(BIN, "rheaper-cc"), "-O1", "-g", "-pthread",
             "-fno-optimize-sibling-calls", "-o", exe, os.path.join(SRC, prog + ".c")])
        pdir = os.path.join(WORK, prog + ".rip")
        os.makedirs(pdir)
        env = dict(os.environ, RHEAPER_ENABLE="1", RHEAPER_PROFILE_DIR=pdir)
        rc, out, err = run([exe], env=env)
        with open(os.path.join(WORK, prog + ".out"), "w") as f:
            f.write(out)
        rips = os.listdir(pdir)
        check(len(rips) == 1, "%s wrote one profile (%s)" % (prog, rips))
        if rips:
            run([os.path.join(BIN, "rheaper-convert"), "--quiet", os.path.join(pdir, rips[0]),
                 db(prog)])


def step_flamegraph():
    folded, _ = facts("known")
    check(len(folded) == 6, "known.c states 6 folded stacks")
    for mode in ("all", "leaked", "peak"):
        _, out, _ = run([RHEAPER, "flamegraph", db("known"), "--" + mode, "--folded"])
        m = folded_map(out)
        want = [(s, w) for (md, s, w) in folded if md == mode]
        for stack, w in want:
            got = weight_of(m, stack)
            check(got == w, "--%s --folded: %s weighs %d (expected %d)" % (mode, stack, got, w))
        # nothing else carries weight in that mode: the program made no other blocks
        check(sum(m.values()) == sum(w for _, w in want),
              "--%s --folded: total %d equals the program's %d" %
              (mode, sum(m.values()), sum(w for _, w in want)))
    # default is --all, and -o writes the same text to a file
    out_file = os.path.join(WORK, "known.folded")
    run([RHEAPER, "flamegraph", db("known"), "--folded", "-o", out_file])
    with open(out_file) as f:
        m = folded_map(f.read())
    check(weight_of(m, "main;hold") == 4000, "default weight is all bytes (main;hold 4000)")
    # shared filters act through `sel`
    _, out, _ = run([RHEAPER, "flamegraph", db("known"), "--folded", "--function", "^leaf_a$"])
    m = folded_map(out)
    check(list(m.values()) == [1000] and weight_of(m, "main;mid;leaf_a") == 1000,
          "--function ^leaf_a$ keeps only main;mid;leaf_a 1000: %r" % m)
    # the workload: all weights add up to the summary's allocated bytes
    s = summary("workload")
    _, out, _ = run([RHEAPER, "flamegraph", db("workload"), "--folded"])
    total = sum(folded_map(out).values())
    check(total == s.get("alloc_bytes"), "workload: folded total %d equals summary alloc_bytes %s"
          % (total, s.get("alloc_bytes")))
    # SVGs: well-formed, with the frames and their details
    for mode, frames in (("all", ["leaf_a", "mid", "leaf_b", "hold", "main"]),
                         ("leaked", ["leaf_b", "main"]), ("peak", ["leaf_b", "hold"])):
        svg = os.path.join(WORK, "known-%s.svg" % mode)
        run([RHEAPER, "flamegraph", db("known"), "--" + mode, "-o", svg])
        xml_ok(svg)
        text = open(svg, encoding="utf-8").read()
        for fr in frames:
            check('data-n="%s"' % fr in text, "%s: frame %s drawn" % (os.path.basename(svg), fr))
        check("<script" in text and "addEventListener('click'" in text,
              "%s: has its zoom script" % os.path.basename(svg))
    text = open(os.path.join(WORK, "known-all.svg"), encoding="utf-8").read()
    check("<title>leaf_a (1000 bytes" in text, "hover title of leaf_a names its 1000 bytes")
    check("<title>hold (4000 bytes" in text, "hover title of hold names its 4000 bytes")
    leaked = open(os.path.join(WORK, "known-leaked.svg"), encoding="utf-8").read()
    check('data-n="hold"' not in leaked, "leaked flamegraph has no hold frame (all freed)")
    svg = os.path.join(WORK, "workload.svg")
    run([RHEAPER, "flamegraph", db("workload"), "-o", svg])
    xml_ok(svg)
    # usage errors: one line, status 2; a missing database is not created
    rc, _, err = run([RHEAPER, "flamegraph", db("known"), "--bogus"], expect=2)
    check("--bogus" in err and err.count("\n") == 1, "unknown option: one line naming it")
    missing = os.path.join(WORK, "missing.db")
    run([RHEAPER, "flamegraph", missing, "--folded"], expect=1)
    check(not os.path.exists(missing), "a missing database is not created")


def timeline_max(path):
    """The highest stacked total of the timeline's data (data-v of each series)."""
    text = open(path, encoding="utf-8").read()
    rows = [list(map(int, v.split())) for v in re.findall(r'data-v="([^"]*)"', text)]
    if not rows:
        return None, text
    return max(sum(col) for col in zip(*rows)), text


def step_timeline():
    for prog, sites in (("known", ["hold (known.c:", "leaf_b (known.c:", "leaf_a (known.c:"]),
                        ("workload", ["build_tree (workload.c:", "startup_table (workload.c:",
                                      "cache_entry (workload.c:"])):
        svg = os.path.join(WORK, prog + "-timeline.svg")
        run([RHEAPER, "timeline", db(prog), "-o", svg])
        xml_ok(svg)
        top, text = timeline_max(svg)
        s = summary(prog)
        _, fig = facts(prog)
        check(top == s.get("peak_bytes"), "%s: timeline maximum %s equals summary peak %s"
              % (prog, top, s.get("peak_bytes")))
        check(top == fig["peak"], "%s: timeline maximum %s equals the program's peak %d"
              % (prog, top, fig["peak"]))
        for site in sites:
            check("<title>" + site in text, "%s: series %s drawn" % (prog, site))
    # a filter narrows the chart: only leaf_b's leaked blocks remain
    svg = os.path.join(WORK, "known-timeline-leaked.svg")
    run([RHEAPER, "timeline", db("known"), "--lifetime", "leaked", "-o", svg])
    top, _ = timeline_max(svg)
    check(top == 1500, "--lifetime leaked: timeline maximum %s is leaf_b's 1500" % top)


UNITS = {"B": 1, "K": 1000, "M": 1000 ** 2, "G": 1000 ** 3, "T": 1000 ** 4}


def ht_bytes(text, label):
    """heaptrack_print's '<label>: 203.46K' as (bytes, tolerance): it rounds to
    two decimals of decimal (1000) units."""
    m = re.search(re.escape(label) + r": ([0-9.]+)([BKMGT])", text)
    if not m:
        return None, 0
    unit = UNITS[m.group(2)]
    return float(m.group(1)) * unit, (0.5 if unit == 1 else 0.005 * unit)


def step_heaptrack():
    if not shutil.which("heaptrack_print"):
        print("SKIP: heaptrack_print not installed (Debian package heaptrack)")
        sys.exit(77)
    for prog in ("known", "workload"):
        out = os.path.join(WORK, prog + ".heaptrack")
        run([RHEAPER, "export", "heaptrack", db(prog), "-o", out])
        _, text, err = run(["heaptrack_print", out])
        s = summary(prog)
        _, fig = facts(prog)
        m = re.search(r"calls to allocation functions: (\d+)", text)
        calls = int(m.group(1)) if m else None
        check(calls == s.get("alloc_blocks") == fig["calls"],
              "%s: heaptrack_print calls %s, summary %s, program %d"
              % (prog, calls, s.get("alloc_blocks"), fig["calls"]))
        for label, key in (("peak heap memory consumption", "peak_bytes"),
                           ("total memory leaked", "leaked_bytes")):
            v, tol = ht_bytes(text, label)
            ok = v is not None and abs(v - s.get(key, -1)) <= tol and \
                abs(v - fig[key.split("_")[0]]) <= tol
            check(ok, "%s: heaptrack_print %s %s (+-%s), summary %s, program %d"
                  % (prog, label, v, tol, s.get(key), fig[key.split("_")[0]]))
        check("failed to parse" not in err + text, "%s: heaptrack_print parsed every line" % prog)
    # the leak's stack reaches heaptrack with its frames
    _, text, _ = run(["heaptrack_print", "-l", "1", os.path.join(WORK, "known.heaptrack")])
    check(re.search(r"1\.50K leaked over 5 calls from\s+leaf_b", text) is not None,
          "heaptrack_print -l shows leaf_b's 5 leaked blocks of 1500 bytes")
    # heaptrack takes .gz/.zst names as compressed: refused with one line
    rc, _, err = run([RHEAPER, "export", "heaptrack", db("known"), "-o",
                      os.path.join(WORK, "x.gz")], expect=2)
    check(".gz" in err and not os.path.exists(os.path.join(WORK, "x.gz")), ".gz name refused")
    run([RHEAPER, "export", "perf", db("known"), "-o", os.path.join(WORK, "x")], expect=2)


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


def chromium(browser, url, extra, tmp):
    """Opens url headless in a fresh profile; returns (dom, console lines, page
    network requests)."""
    prof = tempfile.mkdtemp(dir=tmp)
    netlog = os.path.join(prof, "net.json")
    args = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--user-data-dir=" + os.path.join(prof, "ud"),
            "--enable-logging=stderr", "--v=0", "--log-net-log=" + netlog] + extra + [url]
    p = subprocess.run(args, capture_output=True, text=True, timeout=120)
    console = [l for l in p.stderr.splitlines() if ":CONSOLE" in l]
    requests = []
    try:
        with open(netlog) as f:
            log = json.load(f)
        types = {v: k for k, v in log["constants"]["logEventTypes"].items()}
        url, initiator = {}, {}
        for e in log["events"]:
            prm, src = e.get("params", {}), e["source"]["id"]
            if "url" in prm:
                url.setdefault(src, prm["url"])
            if types.get(e["type"]) == "URL_REQUEST_START_JOB" and "initiator" in prm:
                initiator.setdefault(src, prm["initiator"])
        # requests the page made: those with a real initiator (the browser's own
        # background fetches say "not an origin"), other than file: and data:
        for src, who in initiator.items():
            u = url.get(src, "")
            if who != "not an origin" and not u.startswith(("file:", "data:")):
                requests.append("%s (initiator %s)" % (u, who))
    except (OSError, ValueError, KeyError) as ex:
        fail("cannot read Chromium's network log: %s" % ex)
    return p.stdout, console, requests


def step_html():
    browser = find_chromium()
    if not browser:
        print("SKIP: no Chromium (Debian package chromium; cmake/quickstart.sh test installs it)")
        sys.exit(77)
    tmp = os.path.join(WORK, "chromium")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    # the checks can fail: a page with a console message and a fetch is caught
    bad = os.path.join(tmp, "control.html")
    with open(bad, "w") as f:
        f.write('<!DOCTYPE html><html><body><img src="http://127.0.0.1:9/x.png">'
                '<script>console.error("control")</script></body></html>')
    _, console, requests = chromium(browser, "file://" + bad, ["--dump-dom"], tmp)
    check(any("control" in l for l in console), "control page: its console message is seen")
    check(any("127.0.0.1:9" in (u or "") for u in requests), "control page: its request is seen")

    html = os.path.join(WORK, "report.html")
    run([RHEAPER, "report", db("workload"), "-o", html])
    text = open(html, encoding="utf-8").read()
    check(re.search(r"<meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
                    r"'none'; script-src( 'sha256-[A-Za-z0-9+/=]+')+; style-src 'sha256-", text)
          is not None, "report has a hash-based CSP with default-src 'none'")
    check(re.search(r"(src|href)=\"(https?:)?//", text) is None, "report references no URL")
    s = summary("workload")
    check("%d B" % s.get("peak_bytes", -1) in text, "report states the peak in bytes")
    dom, console, requests = chromium(browser, "file://" + html,
                                      ["--window-size=1280,1900", "--dump-dom"], tmp)
    check(not console, "report: no console message %s" % console[:3])
    check(not requests, "report: no network request %s" % requests[:3])
    body = re.search(r"<body([^>]*)>", dom)
    attrs = dict(re.findall(r'([a-z-]+)="([^"]*)"', body.group(1))) if body else {}
    for key in ("data-timeline", "data-flamegraph"):
        w, _, h = attrs.get(key, "0x0").partition("x")
        check(int(w or 0) > 0 and int(h or 0) > 0, "report: %s drawn at %s" % (key, attrs.get(key)))
    check(int(attrs.get("data-flame-nodes", 0)) > 5,
          "report: %s flamegraph frames drawn" % attrs.get("data-flame-nodes"))
    check(int(attrs.get("data-timeline-areas", 0)) >= 3,
          "report: %s timeline areas drawn" % attrs.get("data-timeline-areas"))
    shot = os.path.join(WORK, "report.png")
    chromium(browser, "file://" + html, ["--window-size=1280,1900", "--screenshot=" + shot], tmp)
    check(os.path.exists(shot) and os.path.getsize(shot) > 10000,
          "screenshot written: %s" % shot)


{"setup": step_setup, "flamegraph": step_flamegraph, "timeline": step_timeline,
 "heaptrack": step_heaptrack, "html": step_html}[STEP]()
print("%s: %d failure(s)" % (STEP, failures))
sys.exit(1 if failures else 0)
