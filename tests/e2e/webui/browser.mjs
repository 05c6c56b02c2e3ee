// browser.mjs: drives the web UI of `rheaper serve` in headless Chromium
// through the DevTools protocol over a pipe (--remote-debugging-pipe: JSON
// messages ended by a NUL byte on file descriptors 3 and 4), as a person
// uses it: opens views, sorts, types a search, and reads what the page
// shows. Saves a screenshot of each view.
//
// usage: node browser.mjs CHROMIUM BASE_URL OUT_DIR CACHE_PEAK_DELTA FREED_BYTES
//        FREED_BLOCKS TEMPORARY
// CACHE_PEAK_DELTA: the change of the bytes cache_store held at each
// profile's peak, from the two databases (the shell reads it with SQL);
// FREED_BYTES, FREED_BLOCKS: the first profile's freed blocks; TEMPORARY:
// its temporary blocks by heaptrack's rule, computed in SQL from the events.
// The environment: FACTS, JSON {"cxx": F, "lua": F or null} with F the
// C++ or Lua profile's facts from SQL over its rows (blocks, temporary,
// min_size, max_size, flame_share: the share of the bytes in stacks through
// the searched function, sites: the call sites' functions (the frames the
// allocations are charged to),
// duration_ns, site_sizes: the smallest and largest block of WordIndex<…>::add);
// SERVER_PID, the server, which the last check stops.
// Prints one line per check ("ok: ..." or "FAIL: ...") and ends with
// "N passed, N failed"; exits 1 when a check failed.
import { spawn } from "node:child_process";
import { writeFileSync, mkdirSync } from "node:fs";

const [chromiumPath, base, outDir, cacheDelta, freedBytes, freedBlocks, temporary] = process.argv.slice(2);
const FACTS = JSON.parse(process.env.FACTS || "{}");
const CXX = "2", LUA = "3"; /* the profiles' ids: run1, run2, the C++ program, Lua */
mkdirSync(outDir, { recursive: true });
let passed = 0, failed = 0;
function check(what, got, want) {
    const ok = typeof want === "function" ? want(got) : got === want;
    if (ok) { passed++; console.log(`ok: ${what}: ${JSON.stringify(got)}`); }
    else { failed++; console.log(`FAIL: ${what}: got ${JSON.stringify(got)}` + (typeof want === "function" ? "" : `, want ${JSON.stringify(want)}`)); }
}

const chrome = spawn(chromiumPath, ["--headless", "--no-sandbox", "--disable-gpu",
    "--disable-dev-shm-usage", "--hide-scrollbars", "--remote-debugging-pipe",
    `--user-data-dir=${outDir}/profile`, "about:blank"],
    { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"] });
let stderr = "";
chrome.stderr.on("data", (d) => { stderr += d; });
const toChrome = chrome.stdio[3], fromChrome = chrome.stdio[4];
let nextId = 1, buf = Buffer.alloc(0);
const pending = new Map();
fromChrome.on("data", (d) => {
    buf = Buffer.concat([buf, d]);
    let z;
    while ((z = buf.indexOf(0)) >= 0) {
        const msg = JSON.parse(buf.subarray(0, z).toString("utf8"));
        buf = buf.subarray(z + 1);
        if (msg.id && pending.has(msg.id)) {
            const { ok, ko } = pending.get(msg.id);
            pending.delete(msg.id);
            if (msg.error) ko(new Error(`${msg.error.message} (${JSON.stringify(msg.error.data || "")})`));
            else ok(msg.result);
        }
    }
});
function send(method, params = {}, sessionId) {
    const id = nextId++;
    const m = { id, method, params };
    if (sessionId) m.sessionId = sessionId;
    toChrome.write(JSON.stringify(m) + "\0");
    return new Promise((ok, ko) => pending.set(id, { ok, ko }));
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let session;
const cmd = (method, params) => send(method, params, session);
async function evaluate(expr) {
    const r = await cmd("Runtime.evaluate", { expression: expr, returnByValue: true, awaitPromise: true });
    if (r.exceptionDetails) throw new Error(`${expr}: ${r.exceptionDetails.text} ${JSON.stringify(r.exceptionDetails.exception || "")}`);
    return r.result.value;
}
/* waits until expr is truthy (30 s at most); returns its value */
async function until(expr, what) {
    for (let i = 0; i < 300; i++) {
        const v = await evaluate(expr);
        if (v) return v;
        await sleep(100);
    }
    throw new Error(`timed out waiting for ${what || expr}`);
}
async function open(query) {
    await cmd("Page.navigate", { url: `${base}/${query}` });
    await sleep(200);
    return until(`document.readyState === "complete" && document.body && document.body.dataset.ready`, `${query} to load`);
}
const ready = () => until(`document.body.dataset.ready`, "the view to load");
/* a screenshot of the window, 1280x800, scrolled to the element sel first */
async function shot(name, sel, block) {
    await sleep(300); /* the charts draw on the next frame */
    if (sel) await evaluate(`document.querySelector(${JSON.stringify(sel)}).scrollIntoView({ block: ${JSON.stringify(block || "start")} })`);
    else await evaluate("window.scrollTo(0, 0)");
    await sleep(100);
    const r = await cmd("Page.captureScreenshot", { format: "png" });
    writeFileSync(`${outDir}/${name}.png`, Buffer.from(r.data, "base64"));
    console.log(`screenshot: ${outDir}/${name}.png`);
}
/* the widest thing on the page against the 1280 px window: the page's
 * scroll width and each visible table's right edge */
const widths = () => evaluate(`({ page: document.documentElement.scrollWidth,
    tables: Math.max(0, ...[...document.querySelectorAll("table.data")].filter((t) => t.offsetParent)
        .map((t) => Math.ceil(t.getBoundingClientRect().right + window.scrollX))) })`);
async function fits(what) {
    const w = await widths();
    check(`${what}: no horizontal scroll at 1280 px (page ${w.page} px, tables end at ${w.tables} px)`,
        w.page <= 1280 && w.tables <= 1280, true);
}
const search = (v) => evaluate(`(() => { const s = document.getElementById("search"); s.value = ${JSON.stringify(v)};
    s.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" })); })()`);
/* the tree's opened heaviest path: its last row, visible in the window */
const hotRow = () => evaluate(`(() => { const tb = document.querySelector("#tree tbody"), r = tb.querySelector("tr.hot");
    if (!r) return null;
    const b = r.getBoundingClientRect();
    return { function: r.dataset.function, depth: Number(r.dataset.depth), leaf: r.querySelector(".tog").textContent.trim() === "\u00b7",
        visible: !!r.offsetParent && b.top >= 0 && b.bottom <= window.innerHeight && b.height > 0,
        self: r.cells[2 + (r.cells.length - 2) / 2].textContent.trim() }; })()`);
/* the rows of a table body as lists of cell texts, and their row data */
const rowsOf = (sel) => evaluate(`[...document.querySelectorAll(${JSON.stringify(sel)})].map((tr) =>
    ({ cells: [...tr.cells].map((c) => c.textContent.trim()), titles: [...tr.cells].map((c) => c.title),
       function: tr.dataset.function || null, location: tr.dataset.location || null }))`);
/* the frames of the flamegraph in iframe id, once it shows the URL holding want */
async function flameFrames(id, want) {
    return until(`(() => { const f = document.getElementById(${JSON.stringify(id)});
        if (!f.src.includes(${JSON.stringify(want)}) || !f.contentDocument) return null;
        const t = [...f.contentDocument.querySelectorAll("g title")].map((x) => x.textContent);
        return t.length ? t : null; })()`, "the flamegraph");
}

async function main() {
    const { targetId } = await send("Target.createTarget", { url: "about:blank" });
    ({ sessionId: session } = await send("Target.attachToTarget", { targetId, flatten: true }));
    await cmd("Page.enable");
    await cmd("Runtime.enable");
    await cmd("Emulation.setDeviceMetricsOverride", { width: 1280, height: 800, deviceScaleFactor: 1, mobile: false });

    /* the overview: figures with units, the heap stacked by call site */
    check("overview loads", await open("?tab=overview&p=0"), "1");
    const cards = await evaluate(`Object.fromEntries([...document.querySelectorAll(".card")].map((c) =>
        [c.querySelector(".k").textContent, c.querySelector(".v").textContent]))`);
    check("overview: allocated in units", cards.allocated, (v) => /^[0-9.]+ (KiB|MiB|GiB)$/.test(v));
    check("overview: duration with its unit", cards.duration, (v) => /^[0-9.]+ (ms|s)$/.test(v));
    check("overview: CPU time shown", cards.CPU, (v) => /^[0-9.]+ (ms|s)$/.test(v));
    const tempTitle = await evaluate(`[...document.querySelectorAll(".card")].filter((c) =>
        c.querySelector(".k").textContent === "temporary").map((c) => c.querySelector(".v").title).join()`);
    check("overview: temporary is heaptrack's rule's count", tempTitle, `${temporary} blocks`);
    const lifeMenu = await evaluate(`[...document.querySelectorAll('select[name="lifetime"] option')].map((o) => o.value + "=" + o.textContent)`);
    check("filters: the lifetime menu calls bytehound's only_temporary freed", lifeMenu.includes("only_temporary=freed (only_temporary)"), true);
    check("filters: and heaptrack's temporary temporary", lifeMenu.includes("only_heaptrack_temporary=temporary (only_heaptrack_temporary)"), true);
    check("overview: series stacked by call site", await evaluate(`Number(document.getElementById("timeline").dataset.series)`), (n) => n >= 3);
    await shot("overview");

    /* the leaks view ranks the planted leak first */
    check("leaks view loads", await open("?tab=leaks&p=0"), "1");
    const leaks = await rowsOf("#leaks tbody tr");
    check("leaks: first row is the planted leak", leaks[0] && leaks[0].cells[5], "record_metrics");
    check("leaks: its blocks (3 threads x 6000 requests / 200)", leaks[0] && leaks[0].cells[2], "90");
    await shot("leaks");

    /* the call-site table sorted by leaked bytes: the leak first, one row per site */
    check("call sites load", await open("?tab=sites&p=0&sort_by=leaked_bytes&order=dsc"), "1");
    const sites = await rowsOf("#sites tbody tr.site");
    check("sites: first row by leaked bytes", sites[0] && sites[0].function, "record_metrics");
    check("sites: the leak badge on it", sites[0] && sites[0].cells[1], (t) => /record_metrics\s+leak$/.test(t || ""));
    const keys = sites.map((s) => `${s.function} ${s.location}`);
    check("sites: no two rows name the same site", new Set(keys).size === keys.length && keys.length >= 3, true);
    const rm = sites.find((s) => s.function === "record_metrics");
    check("sites: allocated bytes in units (18000 x 64 B)", rm && rm.cells[3], "1.10 MiB");
    check("sites: exact bytes on hover", rm && rm.titles[3], "1,152,000 bytes");
    check("sites: leaked in units (90 x 64 B)", rm && rm.cells[5], "5.63 KiB");
    check("sites: every size has a unit", sites.every((s) => /^-?[0-9.]+ (B|KiB|MiB|GiB)$/.test(s.cells[3])), true);
    /* sorting by another column from its header */
    await evaluate(`document.querySelector('#sites th[data-sort="peak_bytes"]').click()`);
    await ready();
    const byPeak = await rowsOf("#sites tbody tr.site");
    check("sites: sorted by bytes held at the peak", byPeak[0] && byPeak[0].function, "cache_store");
    /* one site: its stacks open under its row, histograms over all its blocks */
    await evaluate(`[...document.querySelectorAll("#sites tbody tr.site")].find((r) => r.dataset.function === "record_metrics").click()`);
    await until(`!document.getElementById("site").hidden && document.getElementById("site").dataset.function === "record_metrics"`, "the site's detail");
    check("site: its stacks below the table", await evaluate(`document.getElementById("site-stacks").textContent.includes("handle_request")`), true);
    check("site: size histogram over all its blocks", await evaluate(`document.getElementById("site-sizes").dataset.blocks`), "18000");
    check("site: each stack once (no copy under the row)", await evaluate(`document.querySelectorAll("#sites tr.stacks").length`), 0);
    await shot("site", "#site");

    /* the trees: a search narrows the tree and the flamegraph */
    check("tree loads", await open("?tab=tree&p=0&kind=bottom-up"), "1");
    const treeAll = await evaluate(`Number(document.querySelector("#tree tbody").dataset.rows)`);
    const topAll = await evaluate(`[...document.querySelectorAll('#tree tbody tr[data-depth="0"]')].map((r) => r.dataset.function)`);
    check("tree: bottom-up roots are the call sites", topAll.includes("record_metrics") && topAll.includes("cache_store"), true);
    await shot("tree");
    await evaluate(`(() => { const s = document.getElementById("search"); s.value = "record_metrics";
        s.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" })); })()`);
    check("tree: search applied", await ready(), "1");
    const treeOne = await evaluate(`Number(document.querySelector("#tree tbody").dataset.rows)`);
    const topOne = await evaluate(`[...document.querySelectorAll('#tree tbody tr[data-depth="0"]')].map((r) => r.dataset.function)`);
    check(`tree: the search narrows it (${treeAll} nodes before)`, treeOne, (n) => n > 0 && n < treeAll);
    check("tree: only the searched function's stacks", topOne, (t) => t.length === 1 && t[0] === "record_metrics");
    await shot("tree-search");
    check("flamegraph loads", await open("?tab=flame&p=0&mode=allocated"), "1");
    const flameAll = await flameFrames("flame", "mode=allocated");
    await search("record_metrics");
    await ready();
    const flameOne = await flameFrames("flame", "mode=allocated");
    const hits = await evaluate(`[...document.getElementById("flame").contentDocument.querySelectorAll("g.hit title")].map((t) => t.textContent)`);
    check(`flamegraph: the search highlights and keeps every frame (${flameAll.length})`, flameOne.length, flameAll.length);
    check("flamegraph: the searched function's frames highlighted", hits.length > 0 && hits.every((t) => t.startsWith("record_metrics")), true);
    check("flamegraph: other call sites stay", flameOne.some((t) => t.startsWith("cache_store")), true);
    check("flamegraph: the highlighted count shown", await evaluate(`document.getElementById("flame-match").dataset.frames`), String(hits.length));
    /* record_metrics' 18000 x 64 B against everything allocated (the page's own overview figure) */
    const share = Number(await evaluate(`document.getElementById("flame-match").dataset.share`));
    check("flamegraph: the share of the stacks through them (1,152,000 bytes of all)", share > 0 && share < 1 &&
        /1\.10 MiB, [0-9.]+%/.test(await evaluate(`document.getElementById("flame-match").textContent`)), true);
    await shot("flamegraph-search");
    check("leaked flamegraph loads", await open("?tab=flame&p=0&mode=leaked"), "1");
    const leakedTitle = await until(`(() => { const f = document.getElementById("flame");
        return f.src.includes("mode=leaked") && f.contentDocument && f.contentDocument.querySelector("svg > text") ?
        f.contentDocument.querySelector("svg > text").textContent : null; })()`, "the leaked flamegraph");
    check("flamegraph: the leaked one says so", leakedTitle, (t) => t.startsWith("Flamegraph: leaked bytes"));
    /* every freed block (bytehound's only_temporary), named after what it shows */
    check("freed-blocks flamegraph loads", await open("?tab=flame&p=0&mode=freed"), "1");
    const freedTitle = await until(`(() => { const f = document.getElementById("flame");
        return f.src.includes("mode=freed") && f.contentDocument && f.contentDocument.querySelector("svg > text") ?
        f.contentDocument.querySelector("svg > text").textContent : null; })()`, "the freed-blocks flamegraph");
    check("flamegraph: the freed one says so", freedTitle, (t) => t.startsWith("Flamegraph: bytes of freed blocks"));
    check("flamegraph: the mode's label", await evaluate(`document.querySelector("#flame-mode option:checked").textContent`), "freed blocks' bytes");
    check("flamegraph: no mode is called temporary", await evaluate(`[...document.querySelectorAll("#flame-mode option")].some((o) => /temporar/.test(o.value + o.textContent))`), false);
    check("flamegraph: freed blocks weigh the freed bytes", await evaluate(`document.getElementById("flame").contentDocument.querySelector("title").textContent`),
        (t) => t.startsWith(`all (${freedBytes} bytes, 100.00%, ${freedBlocks} allocations)`));

    /* the CPU view lists the hot function */
    check("CPU view loads", await open("?tab=cpu&p=0"), "1");
    const cpu = await rowsOf("#cpu-top tbody tr");
    check("cpu: the hot function first", cpu[0] && cpu[0].cells[1], "checksum_payload");
    check("cpu: dropped samples shown", await evaluate(`document.getElementById("cpu-figures").textContent`), (t) => /dropped/.test(t));
    await flameFrames("cpu-flame", "mode=cpu");
    await shot("cpu");

    /* compare: the site that grew most first, with its delta */
    check("compare loads", await open("?tab=compare&p=0&other=1"), "1");
    const cmp = await rowsOf("#diff tbody tr");
    check("compare: first row grew most (the cache, doubled)", cmp[0] && cmp[0].cells[1], "cache_store");
    check("compare: its status", cmp[0] && cmp[0].cells[0], "grew");
    check("compare: its delta held at the peak (+8 MiB)", cmp[0] && cmp[0].cells[3], "+8.00 MiB");
    check("compare: exact delta on hover, as the databases say", cmp[0] && cmp[0].titles[3],
        `${Number(cacheDelta).toLocaleString("en")} bytes`);
    /* the plan: 2048 more entries of 4 KiB, give or take the one in flight */
    check("compare: the delta is the cache's doubling", Math.abs(Number(cacheDelta) - 8388608) <= 8192, true);
    check("compare: the fixed leak shrank", cmp.some((r) => r.cells[1] === "record_metrics" && r.cells[0] === "shrank"), true);
    check("compare: both peaks shown", await evaluate(`document.getElementById("diff-peaks").textContent`),
        (t) => /peak of A .*MiB.*peak of B .*MiB/.test(t));
    await fits("compare");
    await shot("compare");
    /* a noise threshold above every change hides them */
    await evaluate(`(() => { const n = document.getElementById("noise"); n.value = "bad"; n.dispatchEvent(new Event("change")); })()`);
    await ready();
    check("compare: a bad noise threshold is shown beside its field",
        await evaluate(`document.querySelector('.err[data-err="noise"]').textContent`), (t) => /noise/.test(t));
    check(`compare: a bad threshold leaves none of the ${cmp.length} rows`, (await rowsOf("#diff tbody tr")).map((r) => r.cells[0]),
        (c) => c.length === 1 && /^not shown: /.test(c[0]));

    /* a bad regex: the error beside the search box, the table stays */
    check("call sites load again", await open("?tab=sites&p=0"), "1");
    const before = (await rowsOf("#sites tbody tr.site")).length;
    await evaluate(`(() => { const s = document.getElementById("search"); s.value = "record_(";
        s.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" })); })()`);
    check("bad regex: the view reports an error", await ready(), "error");
    const err = await evaluate(`document.querySelector('.err[data-err="function_regex"]').textContent`);
    check("bad regex: the message beside the search box", err, (t) => t.length > 0 && !/function_regex: function_regex/.test(t));
    check(`bad regex: no stale row stays (${before} before)`, (await rowsOf("#sites tbody tr.site")).length, 0);
    check("bad regex: the table says why", await evaluate(`document.querySelector("#sites tbody").textContent`), (t) => /^not shown: /.test(t));
    check("bad regex: no stale chart stays", await evaluate(`Number(document.getElementById("timeline").dataset.series)`), 0);
    check("bad regex: the view is greyed", await evaluate(`document.getElementById("tab-sites").classList.contains("failed")`), true);
    await shot("bad-regex");
    /* fixed, the figures come back */
    await search("record_");
    check("regex fixed: the view loads", await ready(), "1");
    check("regex fixed: rows again", (await rowsOf("#sites tbody tr.site")).length, (n) => n >= 1);

    await cxxChecks();
    if (FACTS.lua) await luaChecks(); else console.log("SKIP: the Lua checks (no Lua profile)");

    /* the server gone: the view it would have replaced is cleared */
    check("overview loads before the server goes", await open(`?tab=overview&p=${CXX}`), "1");
    process.kill(Number(process.env.SERVER_PID), "SIGTERM");
    await sleep(500);
    await evaluate(`document.querySelector('#tabs button[data-tab="sites"]').click()`);
    check("server gone: the view reports an error", await ready(), "error");
    check("server gone: said beside the tabs", await evaluate(`document.querySelector('.err[data-err="_view"]').textContent`),
        (t) => /server did not answer/.test(t));
    check("server gone: no stale row", (await rowsOf("#sites tbody tr.site")).length, 0);
    check("server gone: no stale chart", await evaluate(`Number(document.getElementById("timeline").dataset.series)`), 0);
    await shot("server-gone");
    /* asked by the search box, it says so beside the search box */
    await search("make_word");
    check("server gone, searching: the view reports an error", await ready(), "error");
    check("server gone, searching: said beside the search box", await evaluate(`document.querySelector('.err[data-err="function_regex"]').textContent`),
        (t) => /server did not answer/.test(t));
    check("server gone, searching: still no stale row", (await rowsOf("#sites tbody tr.site")).length, 0);
}

/* the C++ profile: names, widths, tree, flamegraph, charts, site, lists */
async function cxxChecks() {
    const F = FACTS.cxx;
    check("C++ overview loads", await open(`?tab=overview&p=${CXX}`), "1");
    await fits("C++ overview");
    /* the top lists and rates */
    const tops = await evaluate(`Object.fromEntries([...document.querySelectorAll("#top-lists table")].map((t) =>
        [t.dataset.by, [...t.tBodies[0].rows].map((r) => [r.cells[0].textContent.trim(), r.cells[1] && (r.cells[1].title || r.cells[1].textContent.trim())])]))`);
    check("overview: four top lists", Object.keys(tops).sort().join(), "count,leaked_bytes,peak_bytes,temporary");
    check("overview: most allocations first make_word(…) (2 x 20000 blocks)", tops.count && tops.count[0].join(" "), "make_word(…) 40,000");
    check("overview: most temporary first lower_copy(…) (20000)", tops.temporary && tops.temporary[0].join(" "), `lower_copy(…) ${F.temporary.toLocaleString("en")}`);
    check("overview: the leak in the leaked list (250 x 48 B)", tops.leaked_bytes && tops.leaked_bytes.some((r) => r.join(" ") === "remember_line(…) 12,000 bytes"), true);
    check("overview: most held at the peak is the index", tops.peak_bytes && tops.peak_bytes[0][0], "WordIndex<…>::add(…)");
    const rate = await evaluate(`[...document.querySelectorAll(".card")].find((c) => c.querySelector(".k").textContent === "allocation rate").querySelector(".v").title`);
    check("overview: the allocation rate, blocks over the run", rate, `${(F.blocks / (F.duration_ns / 1e9)).toFixed(1)} blocks per second`);
    /* heaptrack_gui's charts, stacked by call site, against the rows */
    check("allocations over time: stacked by call site", await evaluate(`Number(document.getElementById("alloc-chart").dataset.series)`), (n) => n >= 3);
    check("allocations over time: ends at every block", await evaluate(`document.getElementById("alloc-chart").dataset.total`), String(F.blocks));
    check("temporary over time: ends at every temporary block", await evaluate(`document.getElementById("temp-chart").dataset.total`), String(F.temporary));
    check("temporary over time: lower_copy's series", await evaluate(`charts["temp-chart"].data.datasets[0].label`), (t) => /^lower_copy\(…\)/.test(t));
    const cls = (v) => Math.ceil(Math.log2(v));
    const labels = (await evaluate(`document.getElementById("sizes-chart").dataset.labels`)).split("|");
    check(`sizes: every class from ${F.min_size} B to ${F.max_size} B on the axis, empty ones too`, labels.length, cls(F.max_size) - cls(F.min_size) + 1);
    check("sizes: an empty class is there (≤ 512 B)", labels.includes("≤ 512 B"), true);
    check("sizes: over every block", await evaluate(`document.getElementById("sizes-chart").dataset.blocks`), String(F.blocks));
    await shot("cxx-overview");
    await shot("cxx-overview-charts", "#top-lists");

    /* the call sites: short names, the full one on hover, within 1280 px */
    check("C++ call sites load", await open(`?tab=sites&p=${CXX}&sort_by=peak_bytes&order=dsc`), "1");
    const sites = await rowsOf("#sites tbody tr.site");
    const add = sites.find((s) => s.function.startsWith("WordIndex<"));
    check("names: the template's short name", add && add.cells[1], "WordIndex<…>::add(…)");
    check("names: the full name on hover", add && add.titles[1],
        "WordIndex<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >, int>::add(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, int const&)");
    await fits("C++ call sites");
    await shot("cxx-sites");
    await evaluate(`(() => { const c = document.getElementById("full-names"); c.checked = true; c.dispatchEvent(new Event("change")); })()`);
    await ready();
    const full = (await rowsOf("#sites tbody tr.site")).find((s) => s.function.startsWith("WordIndex<"));
    check("names: the toggle shows the full name", full && full.cells[1], full && full.function);
    await fits("C++ call sites with full names");
    await evaluate(`(() => { const c = document.getElementById("full-names"); c.checked = false; c.dispatchEvent(new Event("change")); })()`);
    await ready();
    /* one site on one screen: its stacks folded to what differs, each once */
    await evaluate(`[...document.querySelectorAll("#sites tbody tr.site")].find((r) => r.dataset.function.startsWith("WordIndex<")).click()`);
    await until(`!document.getElementById("site").hidden && document.getElementById("site").dataset.function.startsWith("WordIndex<")`, "the site");
    const st = await evaluate(`(() => { const b = document.getElementById("site-stacks");
        return { stacks: b.querySelectorAll(".stack").length, folds: b.querySelectorAll(".shared .fold").length,
            hidden: [...b.querySelectorAll(".folded")].every((x) => x.hidden), height: b.getBoundingClientRect().height,
            differ: [...b.querySelectorAll(".stack")].map((x) => Number(x.dataset.differ)),
            ids: [...b.querySelectorAll(".stack")].map((x) => x.dataset.id) }; })()`);
    check("site: each of its 3 stacks once", st.stacks === 3 && new Set(st.ids).size === 3, true);
    check("site: the shared frames folded", st.folds >= 1 && st.hidden, true);
    check(`site: the stacks fit a screen (${Math.round(st.height)} px)`, st.height < 600, true);
    const ss = (await evaluate(`document.getElementById("site-sizes").dataset.labels`)).split("|");
    const lg = (v) => Math.ceil(Math.log2(v));
    check(`site: its sizes from ${F.site_sizes[0]} B to ${F.site_sizes[1]} B, every class between`, ss.length === lg(F.site_sizes[1]) - lg(F.site_sizes[0]) + 1 &&
        ss[ss.length - 1] === `≤ ${2 ** lg(F.site_sizes[1])} B`, true);
    check("site: the full name in its detail", await evaluate(`document.getElementById("site-full").textContent`), add && add.function);
    check("site: each stack one line of the frames only it has", st.differ.every((n) => n >= 1), true);
    await evaluate(`document.querySelector("#site-stacks .stack .fold").click()`);
    check("site: a stack opens to all its frames", await evaluate(`(() => { const f = document.querySelector("#site-stacks .stack .folded");
        return !f.hidden && f.textContent.includes("index_word(…)") && f.textContent.includes("_start"); })()`), true);
    await fits("C++ site detail");
    await shot("cxx-site", "#site");

    /* the tree opens the heaviest path down to the allocating frame */
    check("C++ top-down tree loads", await open(`?tab=tree&p=${CXX}&kind=top-down`), "1");
    const hot = await hotRow();
    check(`tree: opened down to a leaf (${hot && hot.function}, depth ${hot && hot.depth})`, hot && hot.leaf && hot.depth >= 5, true);
    check("tree: the leaf is an allocating frame (a call site of the rows)", hot && F.sites.includes(hot.function), true);
    check("tree: the allocating frame is visible in the window", hot && hot.visible, true);
    check("tree: its self bytes shown", hot && hot.self, (t) => /[0-9.]+ (B|KiB|MiB)$/.test(t || ""));
    await fits("C++ tree");
    await shot("cxx-tree", "#tree tr.hot", "center");
    check("C++ bottom-up tree loads", await open(`?tab=tree&p=${CXX}&kind=bottom-up`), "1");
    const up = await evaluate(`[...document.querySelectorAll("#tree tbody tr")].map((r) => [Number(r.dataset.depth), r.dataset.function])`);
    check("bottom-up: the top site's callers open", up.length > 2 && up[0][0] === 0 && up[1][0] === 1, true);
    check("bottom-up: out to the outermost frame", (await hotRow()).function, "_start");

    /* the flamegraph: full width, search highlights with the share */
    check("C++ flamegraph loads", await open(`?tab=flame&p=${CXX}&mode=allocated`), "1");
    await flameFrames("flame", "mode=allocated");
    const fw = await evaluate(`(() => { const f = document.getElementById("flame"), s = f.contentDocument.documentElement;
        return { frame: f.clientWidth, page: document.getElementById("tab-flame").clientWidth, svg: Math.round(s.getBoundingClientRect().width) }; })()`);
    check(`flamegraph: fills the page's width (${fw.frame} of ${fw.page} px, the graph ${fw.svg} px)`, fw.frame >= fw.page - 4 && Math.abs(fw.svg - fw.frame) <= 4, true);
    await search("lower_copy");
    await ready();
    const m = await evaluate(`(() => { const b = document.getElementById("flame-match");
        return { frames: Number(b.dataset.frames), share: Number(b.dataset.share), text: b.textContent,
            hits: [...document.getElementById("flame").contentDocument.querySelectorAll("g.hit title")].map((t) => t.textContent) }; })()`);
    check("flamegraph search: lower_copy's frames highlighted", m.frames >= 1 && m.hits.every((t) => t.startsWith("lower_copy")), true);
    check(`flamegraph search: their share is the rows' (${F.flame_share.toFixed(4)})`, Math.abs(m.share - F.flame_share) < 0.0005, true);
    check("flamegraph search: the share said", m.text, (t) => new RegExp(`${(100 * F.flame_share).toFixed(1)}%`).test(t));
    await shot("cxx-flamegraph-search");
    await cmd("Emulation.setDeviceMetricsOverride", { width: 1000, height: 800, deviceScaleFactor: 1, mobile: false });
    await sleep(600);
    const fw2 = await evaluate(`(() => { const f = document.getElementById("flame");
        return { frame: f.clientWidth, drawn: Number(f.dataset.width), svg: Math.round(f.contentDocument.documentElement.getBoundingClientRect().width) }; })()`);
    check(`flamegraph: drawn again at 1000 px (${fw2.svg} px)`, fw2.frame < fw.frame && fw2.drawn === fw2.frame && Math.abs(fw2.svg - fw2.frame) <= 4, true);
    await cmd("Emulation.setDeviceMetricsOverride", { width: 1280, height: 800, deviceScaleFactor: 1, mobile: false });
    await sleep(300);

    /* the other tables of the C++ profile within the window too */
    check("C++ leaks load", await open(`?tab=leaks&p=${CXX}`), "1");
    check("C++ leaks: the leak listed by its short name", (await rowsOf("#leaks tbody tr")).some((r) => r.cells[5] === "remember_line(…)"), true);
    await fits("C++ leaks");
    check("C++ CPU view loads", await open(`?tab=cpu&p=${CXX}`), "1");
    check("C++ CPU: samples listed", (await rowsOf("#cpu-top tbody tr")).length, (n) => n >= 1);
    await fits("C++ CPU view");
    check("C++ threads load", await open(`?tab=threads&p=${CXX}`), "1");
    await fits("C++ threads");

    /* the allocation list: bytehound's filters, sort, one allocation's stack */
    check("allocations load", await open(`?tab=allocs&p=${CXX}&asort=size&aorder=dsc`), "1");
    const al = await rowsOf("#allocs tbody tr");
    check("allocations: sorted by size, largest first", al[0] && al[0].titles[2], `${F.max_size.toLocaleString("en")} bytes`);
    check("allocations: every block counted", await evaluate(`document.getElementById("allocs-count").textContent`),
        (t) => t.startsWith(`${F.blocks.toLocaleString("en")} allocations`));
    await fits("C++ allocations");
    check("allocations: the leak filtered", await open(`?tab=allocs&p=${CXX}&function_regex=remember_line&lifetime=only_leaked&size_min=48&size_max=48`), "1");
    check("allocations: its 250 blocks", await evaluate(`document.getElementById("allocs-count").textContent`), (t) => t.startsWith("250 allocations"));
    const lk = await rowsOf("#allocs tbody tr");
    check("allocations: each one never freed", lk.length === 40 && lk.every((r) => r.cells[5] === "leaked" && r.cells[2] === "48 B"), true);
    await evaluate(`document.querySelector("#allocs tbody tr").click()`);
    check("allocations: one allocation's stack", await evaluate(`document.getElementById("alloc-stack").textContent`),
        (t) => /remember_line\(…\)/.test(t) && /index_word\(…\)/.test(t) && /main/.test(t));
    await shot("cxx-allocations");

    /* compare: two profile.db told apart by their paths */
    check("compare loads for the names", await open("?tab=compare&p=0&other=1"), "1");
    const names = await evaluate(`[...document.querySelectorAll("#profile option")].map((o) => o.textContent)`);
    check("profiles: the two profile.db told apart", names.slice(0, 2), (n) => n[0] === "0: run1/profile.db (prog)" && n[1] === "1: run2/profile.db (prog)");
    check("profiles: the others by their file", names.slice(2, 3), (n) => n[0] === "2: cxx.db (cxx)");
    check("compare: the peaks name both", await evaluate(`document.getElementById("diff-peaks").textContent`), (t) => t.includes("run1/profile.db") && t.includes("run2/profile.db"));
}

/* Lua: C names unchanged, the tree's deep allocating frame, the charts */
async function luaChecks() {
    const F = FACTS.lua;
    check("Lua overview loads", await open(`?tab=overview&p=${LUA}`), "1");
    check("Lua: temporary over time ends at every temporary block", await evaluate(`document.getElementById("temp-chart").dataset.total`), String(F.temporary));
    check("Lua: allocations over time ends at every block", await evaluate(`document.getElementById("alloc-chart").dataset.total`), String(F.blocks));
    const cls = (v) => Math.ceil(Math.log2(v));
    check("Lua: sizes with every class", Number(await evaluate(`document.getElementById("sizes-chart").dataset.classes`)), cls(F.max_size) - cls(F.min_size) + 1);
    await fits("Lua overview");
    await shot("lua-overview");
    check("Lua call sites load", await open(`?tab=sites&p=${LUA}`), "1");
    const sites = await rowsOf("#sites tbody tr.site");
    check("Lua: C names as they are", sites.length > 3 && sites.every((s) => s.cells[1].replace(/\s+leak$/, "") === s.function), true);
    await fits("Lua call sites");
    /* the top site's many stacks on one screen: 12 lines, the rest folded */
    await evaluate(`document.querySelector("#sites tbody tr.site").click()`);
    await until(`!document.getElementById("site").hidden && document.getElementById("site").dataset.function === ${JSON.stringify(sites[0].function)}`, "the Lua site");
    const ls = await evaluate(`(() => { const b = document.getElementById("site-stacks");
        return { shown: [...b.querySelectorAll(":scope > .stack")].length, all: b.querySelectorAll(".stack").length,
            ids: new Set([...b.querySelectorAll(".stack")].map((x) => x.dataset.id)).size, height: Math.round(b.getBoundingClientRect().height) }; })()`);
    const sfig = Number(sites[0].cells[12]);
    check(`Lua site: its ${Math.min(sfig, 50)} largest stacks each once, 12 shown`, ls.all === Math.min(sfig, 50) && ls.ids === ls.all && ls.shown === Math.min(12, ls.all), true);
    check(`Lua site: its stacks on one screen (${ls.height} px)`, ls.height < 500, true);
    await fits("Lua site detail");
    await shot("lua-site", "#site");
    check("Lua top-down tree loads", await open(`?tab=tree&p=${LUA}&kind=top-down`), "1");
    const hot = await hotRow();
    check(`Lua tree: opened down to the allocating frame (${hot && hot.function}, depth ${hot && hot.depth})`,
        hot && hot.leaf && hot.depth >= 10 && F.sites.includes(hot.function), true);
    check("Lua tree: the allocating frame is visible in the window", hot && hot.visible, true);
    await fits("Lua tree");
    await shot("lua-tree", "#tree tr.hot", "center");
    check("Lua flamegraph loads", await open(`?tab=flame&p=${LUA}&mode=allocated&function_regex=luaH_resize`), "1");
    const m = await evaluate(`(() => { const b = document.getElementById("flame-match"); return { frames: Number(b.dataset.frames), share: Number(b.dataset.share) }; })()`);
    check("Lua flamegraph search: luaH_resize highlighted", m.frames >= 1, true);
    check(`Lua flamegraph search: its share is the rows' (${F.flame_share.toFixed(4)})`, Math.abs(m.share - F.flame_share) < 0.0005, true);
    await shot("lua-flamegraph-search", "#flame", "end");
}

const timer = setTimeout(() => { console.log("FAIL: the browser test timed out"); process.exit(1); }, 420000);
main().catch((e) => { failed++; console.log(`FAIL: ${e.message}`); if (stderr) console.log(stderr.slice(-2000)); })
    .finally(() => {
        clearTimeout(timer);
        chrome.kill("SIGTERM");
        console.log(`${passed} passed, ${failed} failed`);
        process.exit(failed ? 1 : 0);
    });
