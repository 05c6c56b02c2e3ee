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
// Prints one line per check ("ok: ..." or "FAIL: ...") and ends with
// "N passed, N failed"; exits 1 when a check failed.
import { spawn } from "node:child_process";
import { writeFileSync, mkdirSync } from "node:fs";

const [chromiumPath, base, outDir, cacheDelta, freedBytes, freedBlocks, temporary] = process.argv.slice(2);
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
async function shot(name) {
    await sleep(300); /* the charts draw on the next frame */
    const h = await evaluate("Math.min(3000, Math.ceil(document.documentElement.scrollHeight))");
    await cmd("Emulation.setDeviceMetricsOverride", { width: 1280, height: Math.max(720, h), deviceScaleFactor: 1, mobile: false });
    await sleep(300);
    const r = await cmd("Page.captureScreenshot", { format: "png" });
    writeFileSync(`${outDir}/${name}.png`, Buffer.from(r.data, "base64"));
    await cmd("Emulation.setDeviceMetricsOverride", { width: 1280, height: 900, deviceScaleFactor: 1, mobile: false });
    console.log(`screenshot: ${outDir}/${name}.png`);
}
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
    await cmd("Emulation.setDeviceMetricsOverride", { width: 1280, height: 900, deviceScaleFactor: 1, mobile: false });

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
    await until(`document.querySelector("#sites tr.stacks") && !document.getElementById("site").hidden`, "the site's stacks");
    check("site: stack opened under its row", await evaluate(`document.querySelector("#sites tr.stacks").textContent.includes("handle_request")`), true);
    check("site: size histogram over all its blocks", await evaluate(`document.getElementById("site-sizes").dataset.blocks`), "18000");
    await shot("site");

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
    await evaluate(`(() => { const s = document.getElementById("search"); s.value = "record_metrics";
        s.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" })); })()`);
    await ready();
    const flameOne = await flameFrames("flame", "function_regex=record_metrics");
    check(`flamegraph: the search narrows it (${flameAll.length} frames before)`, flameOne.length, (n) => n > 0 && n < flameAll.length);
    check("flamegraph: the searched function stays", flameOne.some((t) => t.startsWith("record_metrics")), true);
    check("flamegraph: other call sites go", flameOne.some((t) => t.startsWith("cache_store")), false);
    check("flamegraph: before, both were there", flameAll.some((t) => t.startsWith("cache_store")), true);
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
    await shot("compare");
    /* a noise threshold above every change hides them */
    await evaluate(`(() => { const n = document.getElementById("noise"); n.value = "bad"; n.dispatchEvent(new Event("change")); })()`);
    await ready();
    check("compare: a bad noise threshold is shown beside its field",
        await evaluate(`document.querySelector('.err[data-err="noise"]').textContent`), (t) => /noise/.test(t));
    check("compare: the rows stay", (await rowsOf("#diff tbody tr")).length, cmp.length);

    /* a bad regex: the error beside the search box, the table stays */
    check("call sites load again", await open("?tab=sites&p=0"), "1");
    const before = (await rowsOf("#sites tbody tr.site")).length;
    await evaluate(`(() => { const s = document.getElementById("search"); s.value = "record_(";
        s.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" })); })()`);
    check("bad regex: the view reports an error", await ready(), "error");
    const err = await evaluate(`document.querySelector('.err[data-err="function_regex"]').textContent`);
    check("bad regex: the message beside the search box", err, (t) => t.length > 0 && !/function_regex: function_regex/.test(t));
    check("bad regex: nothing blanks", (await rowsOf("#sites tbody tr.site")).length, before);
    check("bad regex: the chart stays", await evaluate(`Number(document.getElementById("timeline").dataset.series)`), (n) => n >= 3);
    await shot("bad-regex");
}

const timer = setTimeout(() => { console.log("FAIL: the browser test timed out"); process.exit(1); }, 240000);
main().catch((e) => { failed++; console.log(`FAIL: ${e.message}`); if (stderr) console.log(stderr.slice(-2000)); })
    .finally(() => {
        clearTimeout(timer);
        chrome.kill("SIGTERM");
        console.log(`${passed} passed, ${failed} failed`);
        process.exit(failed ? 1 : 0);
    });
