/* app.js: the web UI of rheaper serve.
 *
 * State lives in the page's URL (profile p, tab, sort_by, order and the
 * filters, with the REST API's parameter names), so a view can be bookmarked
 * and reloaded. apply() reads the form, rewrites the URL and loads the heap
 * chart and the open tab from the API. Dragging across the chart sets from/to.
 */
"use strict";

const FILTERS = ["from", "to", "lifetime", "size_min", "size_max", "lifetime_min",
    "lifetime_max", "function_regex", "negative_function_regex", "source_regex",
    "negative_source_regex", "thread", "group_allocations_min",
    "group_leaked_allocations_min", "skip_function", "no_skip"];
const $ = (id) => document.getElementById(id);
const state = { p: "0", tab: "sites", sort_by: "only_matched.size", order: "dsc" };
let profiles = [];
let timelineChart = null, sizesChart = null, lifetimesChart = null;

function esc(s) {
    return String(s === null || s === undefined ? "" : s).replace(/[&<>"']/g,
        (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}
const secs = (tv) => tv ? (tv.secs + tv.fract_nsecs / 1e9).toFixed(6) : "";
const frameText = (f) => f ? `${f.function || "??"}` : "??";
function frameLoc(f) {
    if (!f) return "";
    if (f.source) return `${f.source.replace(/.*\//, "")}:${f.line === null ? "?" : f.line}`;
    return `${(f.library || "?").replace(/.*\//, "")}+0x${f.address.toString(16)}`;
}

/* The filters of the form as URL parameters (empty fields left out). */
function filterParams() {
    const form = $("filters"), q = new URLSearchParams();
    for (const name of FILTERS) {
        const el = form.elements[name];
        if (el.type === "checkbox") { if (el.checked) q.set(name, "1"); }
        else if (el.value.trim() !== "") q.set(name, el.value.trim());
    }
    return q;
}

async function api(path) {
    const r = await fetch(path);
    const type = r.headers.get("Content-Type") || "";
    const body = type.startsWith("application/json") ? await r.json() : await r.text();
    if (!r.ok) {
        const msg = body && body.error ? body.error : `HTTP ${r.status}`;
        throw new Error(body && body.parameter ? `${body.parameter}: ${msg}` : msg);
    }
    return body;
}

function showError(e) { $("error").textContent = e ? String(e.message || e) : ""; }

/* ---- the heap over time ------------------------------------------------ */

async function loadTimeline(q) {
    const t = await api(`/data/${state.p}/timeline?${q}`);
    const xs = t.xs.map((x) => x / 1e9);
    const data = {
        labels: xs,
        datasets: [
            { label: "live bytes (max per column)", data: t.max_size, borderColor: "#c33",
              backgroundColor: "rgba(204,51,51,.15)", fill: true, pointRadius: 0, yAxisID: "y" },
            { label: "live blocks", data: t.end_count, borderColor: "#36c", pointRadius: 0,
              yAxisID: "y1" }],
    };
    /* the process's RSS, when the recording sampled it: the gap above the
     * heap is memory the heap does not explain */
    if (t.rss) data.datasets.push({ label: "RSS (max per column)", data: t.rss, borderColor: "#000",
        pointRadius: 0, spanGaps: true, yAxisID: "y" });
    if (timelineChart) { timelineChart.data = data; timelineChart.update("none"); return; }
    timelineChart = new Chart($("timeline"), {
        type: "line", data,
        options: { animation: false, parsing: true,
            scales: { x: { type: "linear", title: { display: true, text: "seconds" } },
                      y: { beginAtZero: true, title: { display: true, text: "bytes" } },
                      y1: { beginAtZero: true, position: "right", grid: { drawOnChartArea: false },
                            title: { display: true, text: "blocks" } } } },
    });
    let start = null;
    const canvas = $("timeline");
    canvas.addEventListener("mousedown", (e) => { start = e.offsetX; });
    canvas.addEventListener("mouseup", (e) => {
        if (start === null) return;
        const a = Math.min(start, e.offsetX), b = Math.max(start, e.offsetX);
        start = null;
        if (b - a < 4) return;
        const sx = timelineChart.scales.x;
        const from = Math.max(0, sx.getValueForPixel(a)), to = sx.getValueForPixel(b);
        $("filters").elements.from.value = from.toFixed(6);
        $("filters").elements.to.value = to.toFixed(6);
        apply();
    });
}

/* ---- memory not explained by the heap ------------------------------------------ */

const hbytes = (b) => {
    const u = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0, v = b;
    while (v >= 1024 && i < u.length - 1) { v /= 1024; i++; }
    return `${i ? v.toFixed(2) : v} ${u[i]}`;
};

/* The line under the chart: RSS, the heap and the gap at the RSS peak, and
 * the top churn sites of the filtered scope (/data/ID/memory). Hidden when
 * the profile has no memory samples. */
async function loadMemory(q) {
    q.set("count", "3");
    const r = await api(`/data/${state.p}/memory?${q}`);
    const box = $("memory"), m = r.memory;
    if (!m.samples) { box.hidden = true; box.dataset.unexplained = ""; return; }
    const p = m.peak;
    const churn = r.churn.map((c) => `<code>${esc(c.function)}</code> (${esc(c.location)}) ` +
        `${hbytes(c.churn_bytes_per_s)}/s, ${c.short_lived} short-lived`).join("; ");
    box.innerHTML = `<b>Memory not explained by the heap</b>: at the RSS peak ` +
        `(${(p.time_ns / 1e9).toFixed(3)} s) RSS ${hbytes(p.rss)}, live heap ${hbytes(p.heap)}: ` +
        `the heap explains ${(100 * p.heap_share).toFixed(1)}%, ${hbytes(p.unexplained)} not explained` +
        (p.alloc_free !== undefined ? `; ${m.allocator}: ${hbytes(p.alloc_free)} of the arena not in use` : "") +
        (churn ? `. Top churn: ${churn}` : "");
    box.dataset.unexplained = String(p.unexplained);
    box.dataset.churn = r.churn.length ? r.churn[0].function : "";
    box.hidden = false;
}

/* ---- call sites -------------------------------------------------------------- */

async function loadSites(q) {
    q.set("sort_by", state.sort_by);
    q.set("order", state.order);
    q.set("count", "200");
    const url = `/data/${state.p}/allocation_groups?${q}`;
    $("query").textContent = location.origin + url;
    $("query").href = url;
    const r = await api(url);
    $("sites-count").textContent = `${r.total_count} stacks`;
    for (const th of document.querySelectorAll("#sites th[data-sort]"))
        th.classList.toggle("sorted", th.dataset.sort === state.sort_by);
    const tb = $("sites").tBodies[0];
    tb.innerHTML = "";
    r.allocations.forEach((g, i) => {
        const f = g.backtrace[g.callsite] || g.backtrace[0];
        const m = g.only_matched, a = g.all;
        const tr = document.createElement("tr");
        tr.innerHTML = `<td>${i + 1}</td><td class="fn">${esc(frameText(f))}</td>` +
            `<td>${esc(frameLoc(f))}</td><td>${m.size}</td><td>${m.allocated_count}</td>` +
            `<td>${m.leaked_count}</td><td>${secs(m.interval)}</td>` +
            `<td>${secs(m.min_timestamp)}</td><td>${secs(m.max_timestamp)}</td>` +
            `<td>${a.size}</td><td>${a.allocated_count}</td><td>${a.leaked_count}</td>`;
        tr.addEventListener("click", () => {
            for (const x of tb.rows) x.classList.remove("selected");
            tr.classList.add("selected");
            showSite(g).catch(showError);
        });
        tb.appendChild(tr);
    });
    tb.dataset.top = r.allocations.length ?
        frameText(r.allocations[0].backtrace[r.allocations[0].callsite]) : "";
}

function histogram(canvasId, old, labels, counts, label) {
    if (old) old.destroy();
    return new Chart($(canvasId), {
        type: "bar", data: { labels, datasets: [{ label, data: counts, backgroundColor: "#69c" }] },
        options: { animation: false, plugins: { legend: { display: false } } },
    });
}

async function showSite(g) {
    $("site").hidden = false;
    const f = g.backtrace[g.callsite] || g.backtrace[0];
    $("site-name").textContent = `${frameText(f)} (${frameLoc(f)}), stack ${g.backtrace_id}`;
    $("site-stack").innerHTML = g.backtrace.map((x, i) =>
        `<li${i === g.callsite ? ' style="font-weight:bold"' : ""}>${esc(frameText(x))} ` +
        `<small>${esc(frameLoc(x))}${x.is_inline ? " (inlined)" : ""}</small></li>`).join("");
    const q = filterParams();
    q.set("backtraces", g.backtrace_id);
    q.set("count", "2000");
    const r = await api(`/data/${state.p}/allocations?${q}`);
    $("site-allocs-count").textContent = `${r.total_count} allocations` +
        (r.allocations.length < r.total_count ? `, first ${r.allocations.length} shown in the histograms` : "");
    const tb = $("site-allocs").tBodies[0];
    tb.innerHTML = r.allocations.slice(0, 200).map((a) =>
        `<tr><td>${secs(a.timestamp)}</td><td>${a.size}</td><td>${a.address_s}</td>` +
        `<td>${a.thread}</td><td>${a.deallocation ? secs(a.deallocation.timestamp) : "leaked"}</td></tr>`).join("");
    /* sizes by power of two; lifetimes by decade of ns, leaked apart */
    const sz = new Map(), lt = new Map();
    for (const a of r.allocations) {
        const b = 2 ** Math.ceil(Math.log2(Math.max(1, a.size)));
        sz.set(b, (sz.get(b) || 0) + 1);
        let k = "leaked";
        if (a.deallocation) {
            const ns = (a.deallocation.timestamp.secs - a.timestamp.secs) * 1e9 +
                (a.deallocation.timestamp.fract_nsecs - a.timestamp.fract_nsecs);
            k = ns < 1000 ? "<1us" : ns < 1e6 ? "<1ms" : ns < 1e9 ? "<1s" : ">=1s";
        }
        lt.set(k, (lt.get(k) || 0) + 1);
    }
    const sk = [...sz.keys()].sort((x, y) => x - y);
    sizesChart = histogram("site-sizes", sizesChart, sk.map((k) => `<=${k}`), sk.map((k) => sz.get(k)), "blocks");
    const lk = ["<1us", "<1ms", "<1s", ">=1s", "leaked"].filter((k) => lt.has(k));
    lifetimesChart = histogram("site-lifetimes", lifetimesChart, lk, lk.map((k) => lt.get(k)), "blocks");
}

/* ---- the other tabs ------------------------------------------------------------ */

function loadFlame(q) {
    $("flame").src = `/data/${state.p}/export/flamegraph?${q}`;
}

async function loadLeaks(q) {
    q.set("count", "100");
    const r = await api(`/data/${state.p}/leaks?${q}`);
    $("leaks").tBodies[0].innerHTML = r.leaks.map((l) =>
        `<tr><td>${l.score.toFixed(3)}</td><td>${l.leaked_size}</td><td>${l.leaked_count}</td>` +
        `<td>${secs(l.first)}</td><td>${secs(l.last)}</td><td>${esc(l.function)}</td>` +
        `<td>${esc(l.location)}</td></tr>`).join("");
}

async function loadThreads(q) {
    const r = await api(`/data/${state.p}/threads?${q}`);
    $("threads").tBodies[0].innerHTML = r.threads.map((t) =>
        `<tr><td>${t.id}</td><td>${t.tid}</td><td>${esc(t.name)}</td><td>${t.allocated_count}</td>` +
        `<td>${t.allocated_size}</td><td>${t.leaked_count}</td><td>${t.leaked_size}</td></tr>`).join("");
}

async function loadCompare(q) {
    const other = $("other").value;
    if (other === "") {
        $("diff").tBodies[0].innerHTML = "<tr><td colspan=9>serve two profiles to compare them</td></tr>";
        return;
    }
    q.set("count", "500");
    const r = await api(`/data/${state.p}/diff/${other}?${q}`);
    $("diff").tBodies[0].innerHTML = r.sites.filter((s) => s.status !== "same").map((s) =>
        `<tr class="${s.status}"><td>${s.status}</td><td>${esc(s.function)}</td><td>${esc(s.location)}</td>` +
        `<td>${s.a.count}</td><td>${s.b.count}</td><td>${s.a.size}</td><td>${s.b.size}</td>` +
        `<td>${s.a.leaked_size}</td><td>${s.b.leaked_size}</td></tr>`).join("");
}

/* ---- state ------------------------------------------------------------------------- */

function pageUrl() {
    const q = filterParams();
    q.set("p", state.p);
    q.set("tab", state.tab);
    q.set("sort_by", state.sort_by);
    q.set("order", state.order);
    if ($("other").value !== "") q.set("other", $("other").value);
    return "?" + q.toString();
}

async function apply() {
    showError(null);
    history.replaceState(null, "", pageUrl());
    for (const b of document.querySelectorAll("#tabs button"))
        b.classList.toggle("on", b.dataset.tab === state.tab);
    for (const s of document.querySelectorAll("section.tab"))
        s.hidden = s.id !== "tab-" + state.tab;
    const p = profiles.find((x) => x.id === state.p);
    if (p) $("meta").textContent = `${p.executable}: ${p.allocations} allocations, ` +
        `${(p.runtime.secs + p.runtime.fract_nsecs / 1e9).toFixed(3)} s, ` +
        `${p.final_allocated} bytes never freed`;
    try {
        const loads = [loadTimeline(filterParams()), loadMemory(filterParams())];
        const q = filterParams();
        if (state.tab === "sites") loads.push(loadSites(q));
        if (state.tab === "flame") loadFlame(q);
        if (state.tab === "leaks") loads.push(loadLeaks(q));
        if (state.tab === "threads") loads.push(loadThreads(q));
        if (state.tab === "compare") loads.push(loadCompare(q));
        await Promise.all(loads);
        document.body.dataset.ready = "1";
    } catch (e) {
        showError(e);
        document.body.dataset.ready = "error";
    }
}

async function init() {
    const u = new URLSearchParams(location.search);
    for (const k of ["p", "tab", "sort_by", "order"]) if (u.get(k)) state[k] = u.get(k);
    const form = $("filters");
    for (const name of FILTERS) {
        const el = form.elements[name];
        if (el.type === "checkbox") el.checked = u.get(name) === "1";
        else if (u.get(name) !== null) el.value = u.get(name);
    }
    try { profiles = await api("/list"); } catch (e) { showError(e); return; }
    $("profile").innerHTML = profiles.map((p) =>
        `<option value="${esc(p.id)}">${esc(p.id)}: ${esc(p.executable)} (${esc(p.path)})</option>`).join("");
    if (!profiles.some((p) => p.id === state.p) && profiles.length) state.p = profiles[0].id;
    $("profile").value = state.p;
    const others = profiles.filter((p) => p.id !== state.p);
    $("other").innerHTML = others.length ? others.map((p) =>
        `<option value="${esc(p.id)}">${esc(p.id)}: ${esc(p.path)}</option>`).join("") : '<option value="">(none)</option>';
    if (u.get("other") && others.some((p) => p.id === u.get("other"))) $("other").value = u.get("other");

    form.addEventListener("submit", (e) => { e.preventDefault(); apply(); });
    $("reset").addEventListener("click", () => { form.reset(); apply(); });
    $("profile").addEventListener("change", () => { state.p = $("profile").value; location.search = pageUrl(); });
    $("other").addEventListener("change", () => apply());
    for (const b of document.querySelectorAll("#tabs button"))
        b.addEventListener("click", () => { state.tab = b.dataset.tab; apply(); });
    for (const th of document.querySelectorAll("#sites th[data-sort]"))
        th.addEventListener("click", () => {
            if (state.sort_by === th.dataset.sort) state.order = state.order === "dsc" ? "asc" : "dsc";
            else { state.sort_by = th.dataset.sort; state.order = "dsc"; }
            apply();
        });
    await apply();
}

init();
