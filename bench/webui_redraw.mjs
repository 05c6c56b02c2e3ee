// webui_redraw.mjs: how long the web UI of `rheaper serve` takes to redraw a
// view after a search, end to end, in headless Chromium (bench/webui_redraw.sh
// runs it; docs/benchmarks.md "rheaper serve").
//
// usage: node webui_redraw.mjs CHROMIUM BASE_URL RUNS TERM... 
//
// Drives Chromium over the DevTools protocol on a pipe (--remote-debugging-
// pipe: JSON messages ended by a NUL byte on file descriptors 3 and 4). For
// each view (overview, call sites, top-down tree) it opens the page, waits
// until the page says it is drawn (body data-ready "1"), then RUNS times types
// the next TERM into the search box, presses Enter and times, in the page's
// own clock, from the key to the view drawn again (every request of the view
// answered and drawn: the page's Promise.allSettled). The terms are used in
// turn, so each redraw asks a scope the server has not just computed. Prints
// one line per redraw and per view "VIEW median MS min MS max MS (N runs)";
// a view that reports an error prints "FAIL:" and the script exits 1. With
// RH_REDRAW_SHOTS=DIR in the environment it also saves DIR/VIEW.png, the
// window after the view's last redraw, to look at.
import { writeFileSync } from "node:fs";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [chromiumPath, base, runsArg, ...terms] = process.argv.slice(2);
const runs = Number(runsArg) || 5;
if (!chromiumPath || !base || !terms.length) {
    console.error("usage: node webui_redraw.mjs CHROMIUM BASE_URL RUNS TERM...");
    process.exit(2);
}
const dir = mkdtempSync(join(tmpdir(), "rh-redraw-"));
const chrome = spawn(chromiumPath, ["--headless", "--no-sandbox", "--disable-gpu",
    "--disable-dev-shm-usage", "--remote-debugging-pipe", `--user-data-dir=${dir}`, "about:blank"],
    { stdio: ["ignore", "ignore", "ignore", "pipe", "pipe"] });
const toChrome = chrome.stdio[3], fromChrome = chrome.stdio[4];
let nextId = 1, buf = Buffer.alloc(0), attached; // the page target's id in the DevTools protocol
const pending = new Map();
fromChrome.on("data", (d) => {
    buf = Buffer.concat([buf, d]);
    let z;
    while ((z = buf.indexOf(0)) >= 0) {
        const msg = JSON.parse(buf.subarray(0, z).toString("utf8"));
        buf = buf.subarray(z + 1);
        const p = msg.id && pending.get(msg.id);
        if (p) {
            pending.delete(msg.id);
            if (msg.error) p.ko(new Error(msg.error.message));
            else p.ok(msg.result);
        }
    }
});
function send(method, params = {}, sessionId) {
    const id = nextId++;
    toChrome.write(JSON.stringify(sessionId ? { id, method, params, sessionId } : { id, method, params }) + "\0");
    return new Promise((ok, ko) => pending.set(id, { ok, ko }));
}
const cmd = (method, params) => send(method, params, attached);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function evaluate(expr) {
    const r = await cmd("Runtime.evaluate", { expression: expr, returnByValue: true, awaitPromise: true });
    if (r.exceptionDetails) throw new Error(`${expr}: ${r.exceptionDetails.text}`);
    return r.result.value;
}
/* the page's data-ready once it is set (300 s at most) */
async function drawn() {
    for (let i = 0; i < 3000; i++) {
        const v = await evaluate(`document.body ? document.body.dataset.ready : ""`);
        if (v) return v;
        await sleep(100);
    }
    throw new Error("the view did not finish drawing in 300 s");
}
const median = (v) => { const s = [...v].sort((a, b) => a - b); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };

let bad = 0;
try {
    const { targetId } = await send("Target.createTarget", { url: "about:blank" });
    ({ sessionId: attached } = await send("Target.attachToTarget", { targetId, flatten: true }));
    await cmd("Page.enable");
    await cmd("Emulation.setDeviceMetricsOverride", { width: 1280, height: 800, deviceScaleFactor: 1, mobile: false });
    let k = 0;
    for (const tab of ["overview", "sites", "tree"]) {
        await cmd("Page.navigate", { url: `${base}/?tab=${tab}&p=0` });
        await sleep(300);
        if (await drawn() !== "1") { console.log(`FAIL: ${tab}: the view reports an error before any search`); bad++; continue; }
        const ms = [];
        for (let r = 0; r < runs; r++) {
            const term = terms[k++ % terms.length];
            /* the clock starts in the page as the key goes in, and stops when
             * the page marks the view drawn again */
            const t = await evaluate(`new Promise((done) => {
                const s = document.getElementById("search"), t0 = performance.now();
                s.value = ${JSON.stringify(term)};
                s.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
                const poll = () => { const v = document.body.dataset.ready;
                    if (v) done({ ms: performance.now() - t0, ready: v }); else setTimeout(poll, 5); };
                setTimeout(poll, 0); })`);
            if (t.ready !== "1") { console.log(`FAIL: ${tab}: search ${term}: the view reports an error`); bad++; }
            console.log(`${tab} search ${term}: ${t.ms.toFixed(0)} ms`);
            ms.push(t.ms);
            /* the charts draw on the next frames; let them settle */
            await sleep(500);
        }
        if (process.env.RH_REDRAW_SHOTS) {
            const shot = await cmd("Page.captureScreenshot", { format: "png" });
            writeFileSync(join(process.env.RH_REDRAW_SHOTS, `${tab}.png`), Buffer.from(shot.data, "base64"));
        }
        console.log(`${tab} median ${median(ms).toFixed(0)} ms min ${Math.min(...ms).toFixed(0)} ms max ${Math.max(...ms).toFixed(0)} ms (${ms.length} runs)`);
    }
} catch (e) {
    console.log(`FAIL: ${e.message}`);
    bad++;
}
chrome.kill("SIGTERM");
await sleep(300);
rmSync(dir, { recursive: true, force: true });
process.exit(bad ? 1 : 0);
