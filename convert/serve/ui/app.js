/* app.js: the web UI of rheaper serve.
 *
 * State lives in the page's URL (profile p, tab, sort_by, order, the tree's
 * and compare view's choices, and the filters with the REST API's parameter
 * names), so a view can be bookmarked and reloaded. apply() reads the form,
 * rewrites the URL and loads the chart and the open tab from the API. Every
 * figure comes computed from the server (the query library); this file only
 * formats (human units, exact values on hover) and draws. Names are the
 * short ones the server sends beside the full ones (templates as <…>,
 * parameters as (…)), the full name on hover and with the "full names"
 * toggle. A request that fails greys out and clears what it would have
 * replaced, and puts its reason beside the control that caused it (a field,
 * else the tabs).
 */
"use strict";

const FILTERS = ["from", "to", "lifetime", "size_min", "size_max", "lifetime_min",
    "lifetime_max", "function_regex", "negative_function_regex", "source_regex",
    "negative_source_regex", "thread", "group_allocations_min",
    "group_leaked_allocations_min", "skip_function", "no_skip"];
const $ = (id) => document.getElementById(id);
const state = { p: "0", tab: "overview", sort_by: "bytes", order: "dsc", kind: "bottom-up",
    tfn: "", tsort: "bytes", mode: "allocated", by: "peak", noise: "1", names: "",
    asort: "timestamp", aorder: "asc", askip: "0" };
let profiles = [];
let charts = {};
let duration = 0; /* the run, s: the time axes end there */
let stamp = 0;    /* the current apply(): answers of older ones are dropped */
let cause = null; /* the control whose change asked for the current view (null: a tab) */

/* ---- formatting ---------------------------------------------------------------- */

function esc(s) {
    return String(s === null || s === undefined ? "" : s).replace(/[&<>"']/g,
        (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}
/* bytes for people: 812 B, 1.50 KiB, 3.25 MiB */
function hbytes(b) {
    if (b === null || b === undefined) return "";
    const u = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0, v = Math.abs(b);
    while (v >= 1024 && i < u.length - 1) { v /= 1024; i++; }
    return `${b < 0 ? "-" : ""}${i ? v.toFixed(v < 10 ? 2 : v < 100 ? 1 : 0) : v} ${u[i]}`;
}
/* a count for people: 1234567 -> 1.23 M */
function hcount(n) {
    if (n === null || n === undefined) return "";
    const a = Math.abs(n);
    if (a < 10000) return String(n);
    if (a < 1e6) return `${(n / 1e3).toFixed(1)} k`;
    if (a < 1e9) return `${(n / 1e6).toFixed(2)} M`;
    return `${(n / 1e9).toFixed(2)} G`;
}
/* a time in ns for people: 850 ns, 12.3 ms, 4.02 s */
function hns(ns) {
    if (ns === null || ns === undefined) return "";
    const a = Math.abs(ns);
    if (a === 0) return "0 s";
    if (a < 1e3) return `${ns} ns`;
    if (a < 1e6) return `${(ns / 1e3).toFixed(1)} us`;
    if (a < 1e9) return `${(ns / 1e6).toFixed(a < 1e7 ? 1 : 0)} ms`;
    return `${(ns / 1e9).toFixed(a < 1e10 ? 2 : 1)} s`;
}
const base = (path) => String(path || "").replace(/.*\//, "");
const sign = (v, f) => (v > 0 ? "+" : "") + f(v);
/* a table cell: the human figure, the exact one on hover */
const cb = (b) => `<td title="${b === null || b === undefined ? "" : b.toLocaleString("en") + " bytes"}">${hbytes(b)}</td>`;
const cn = (n) => `<td title="${n === null || n === undefined ? "" : n.toLocaleString("en")}">${hcount(n)}</td>`;
const ct = (ns) => `<td title="${ns === null || ns === undefined ? "" : ns.toLocaleString("en") + " ns"}">${hns(ns)}</td>`;
const tvns = (tv) => tv ? tv.secs * 1e9 + tv.fract_nsecs : null;
/* a function's name as the page shows it: short unless "full names" is on,
 * the full one on hover (o: an answer's object with function and short) */
const fname = (o) => (state.names === "full" ? o.function : (o.short || o.function)) || "";
const nm = (o) => `<span class="nm" title="${esc(o.function)}">${esc(fname(o))}</span>`;
/* a table cell holding a function's name */
const cfn = (o, extra) => `<td class="fn l" title="${esc(o.function)}">${esc(fname(o))}${extra || ""}</td>`;
const cloc = (l) => `<td class="l loc" title="${esc(l)}">${esc(l)}</td>`;
const badge = (s) => s.leak ? ' <span class="badge" title="steady growth of never-freed blocks">leak</span>' : "";

/* The filters of the form as URL parameters (empty fields left out). */
function filterParams() {
    const form = $("filters"), q = new URLSearchParams();
    for (const name of FILTERS) {
        if (name === "function_regex") {
            if ($("search").value.trim() !== "") q.set(name, $("search").value.trim());
            continue;
        }
        const el = form.elements[name];
        if (el.type === "checkbox") { if (el.checked) q.set(name, "1"); }
        else if (el.value.trim() !== "") q.set(name, el.value.trim());
    }
    return q;
}

class ApiError extends Error {
    constructor(msg, param) { super(msg); this.param = param; }
}

async function api(path) {
    let r;
    try { r = await fetch(path); } catch (e) { throw new ApiError(`the server did not answer (${e.message})`, null); }
    const type = r.headers.get("Content-Type") || "";
    const body = type.startsWith("application/json") ? await r.json() : await r.text();
    if (!r.ok) throw new ApiError(body && body.error ? body.error : `HTTP ${r.status}`,
        body && body.parameter ? body.parameter : null);
    return body;
}

function clearErrors() {
    $("error").textContent = "";
    for (const e of document.querySelectorAll(".err")) { e.textContent = ""; e.parentElement.classList.remove("bad"); }
}
/* A request for the part `box` (a section) failed with e: what it shows is
 * stale, so its tables are emptied, its cards and charts removed and the
 * part greyed, with the reason in it; nothing of the old figures stays. */
function failPart(box, e) {
    if (!box) return;
    box.classList.add("failed");
    for (const tb of box.querySelectorAll("table.data tbody")) {
        const cols = tb.parentElement.tHead && tb.parentElement.tHead.rows.length ?
            [...tb.parentElement.tHead.rows[tb.parentElement.tHead.rows.length - 1].cells].length : 1;
        tb.innerHTML = `<tr class="failed-row"><td class="l" colspan="${cols + 2}">not shown: ${esc(e.message || e)}</td></tr>`;
        tb.dataset.rows = "0";
        tb.dataset.top = "";
    }
    for (const c of box.querySelectorAll("canvas")) {
        if (charts[c.id]) { charts[c.id].destroy(); delete charts[c.id]; }
        c.dataset.series = "0";
    }
    for (const c of box.querySelectorAll(".cards, #top-lists, #site-stacks, #alloc-stack, .match, #sites-count, #allocs-count, #cpu-figures, #diff-peaks")) c.innerHTML = "";
    for (const c of box.querySelectorAll("#memory, #site")) c.hidden = true;
    for (const f of box.querySelectorAll("iframe")) { f.removeAttribute("src"); f.src = "about:blank"; }
    let note = box.querySelector(".failed-note");
    if (!note) {
        note = document.createElement("p");
        note.className = "failed-note";
        box.prepend(note);
    }
    note.textContent = `not shown: ${e.message || e}`;
}
function unfail() {
    for (const b of document.querySelectorAll(".failed")) b.classList.remove("failed");
    for (const n of document.querySelectorAll(".failed-note")) n.remove();
}
/* The message beside the field it names, else under the form. */
function showError(e) {
    const box = e.param ? document.querySelector(`.err[data-err="${e.param}"]`) : null;
    if (box) {
        /* the field names the parameter already */
        box.textContent = e.message.startsWith(`${e.param}: `) ? e.message.slice(e.param.length + 2) : e.message;
        box.parentElement.classList.add("bad");
        if (box.closest("details")) box.closest("details").open = true;
    } else {
        /* no parameter to blame (the server is gone, an internal error):
         * beside the control that asked for the view, else the tabs */
        const msg = e instanceof TypeError ? `the server did not answer (${e.message})` : String(e.message || e);
        const near = cause && cause.closest("label") && cause.closest("label").querySelector(".err");
        const b = near || document.querySelector('.err[data-err="_view"]');
        b.textContent = msg;
        b.parentElement.classList.add("bad");
    }
}
function setQuery(url) {
    $("query").textContent = location.origin + url;
    $("query").href = url;
}

/* ---- charts ------------------------------------------------------------------------ */

const PALETTE = ["#c0392b", "#2e86c1", "#27ae60", "#d68910", "#8e44ad", "#17a589", "#ba4a00",
    "#2c3e50", "#7f8c8d", "#c71585"];
const axisBytes = { callback: (v) => hbytes(v) };
/* byte axes step by powers of two: 0, 2, 4, 6, 8 MiB rather than 977 KiB steps */
function binaryTicks(axis) {
    if (!(axis.max > 0)) return;
    const step = 2 ** Math.floor(Math.log2(axis.max / 4));
    if (step < 1) return;
    const ticks = [];
    for (let v = 0; v <= axis.max; v += step) ticks.push({ value: v });
    axis.ticks = ticks;
}
const axisSecs = { callback: (v) => hns(v * 1e9) };

function lineChart(id, datasets, opts) {
    if (charts[id]) charts[id].destroy();
    charts[id] = new Chart($(id), {
        type: "line", data: { datasets },
        options: { animation: false, parsing: false, normalized: true, maintainAspectRatio: false,
            interaction: { mode: "nearest", axis: "x", intersect: false },
            plugins: { tooltip: { callbacks: {
                title: (items) => items.length ? hns(items[0].parsed.x * 1e9) : "",
                label: (c) => opts.count ? `${c.dataset.label}: ${c.parsed.y.toLocaleString("en")} blocks` :
                    `${c.dataset.label}: ${hbytes(c.parsed.y)} (${c.parsed.y.toLocaleString("en")} bytes)` } },
                legend: opts.count ? { position: "bottom", labels: { boxWidth: 10, font: { size: 10 } } } : { labels: { boxWidth: 12 } } },
            scales: { x: { type: "linear", min: 0, max: opts.max, ticks: axisSecs,
                           title: { display: true, text: "time" } },
                      y: opts.count ? { stacked: !!opts.stacked, beginAtZero: true, ticks: { callback: (v) => hcount(v) },
                           title: { display: true, text: opts.ytitle || "blocks" } } :
                         { stacked: !!opts.stacked, beginAtZero: true, ticks: axisBytes, afterBuildTicks: binaryTicks,
                           title: { display: true, text: "live heap" } } } },
    });
    return charts[id];
}

function barChart(id, labels, values, title) {
    if (charts[id]) charts[id].destroy();
    charts[id] = new Chart($(id), {
        type: "bar", data: { labels, datasets: [{ label: title, data: values, backgroundColor: "#5d8fc9" }] },
        options: { animation: false, maintainAspectRatio: false, plugins: { legend: { display: false } },
            scales: { x: { ticks: { autoSkip: false, maxRotation: 90, minRotation: 0, font: { size: 10 } } },
                      y: { beginAtZero: true, ticks: { callback: (v) => hcount(v) } } } },
    });
    $(id).dataset.classes = String(labels.length);
    $(id).dataset.labels = labels.join("|");
}
/* The size classes of an answer ({max_size, count, bytes}, every class on
 * the axis) as a bar chart of blocks. */
function sizesChart(id, sizes) {
    barChart(id, sizes.map((s) => `≤ ${hbytes(s.max_size)}`), sizes.map((s) => s.count), "blocks");
    $(id).dataset.blocks = String(sizes.reduce((a, s) => a + s.count, 0));
}
/* A chart of the server's series by call site (/timeline_sites,
 * /timeline_allocations): each site stacked on the ones before. */
function siteSets(t) {
    const xs = t.xs.map((x) => x / 1e9);
    return t.series.filter((s) => s.values.some((v) => v > 0)).map((s, i) => ({
        label: s.location ? `${fname(s)} (${s.location})` : fname(s), data: xs.map((x, k) => ({ x, y: s.values[k] })),
        borderColor: PALETTE[i % PALETTE.length], backgroundColor: PALETTE[i % PALETTE.length] + "99",
        fill: i ? "-1" : "origin", pointRadius: 0, borderWidth: 1 }));
}

/* The heap over time of the scope, the top call sites stacked (the server's
 * /timeline_sites); the plain heap line (/timeline) when the scope has no
 * timeline by site. */
async function loadTimeline(q, my) {
    q.set("count", "8");
    const t = await api(`/data/${state.p}/timeline_sites?${q}`);
    if (my !== stamp) return;
    let sets = [];
    if (t.timeline) {
        sets = siteSets(t);
    } else {
        q.delete("count");
        const p = await api(`/data/${state.p}/timeline?${q}`);
        if (my !== stamp) return;
        const x2 = p.xs.map((x) => x / 1e9);
        sets = [{ label: "live heap", data: x2.map((x, i) => ({ x, y: p.max_size[i] })),
            borderColor: "#c33", backgroundColor: "rgba(204,51,51,.15)", fill: true, pointRadius: 0 }];
    }
    const ch = lineChart("timeline", sets, { max: duration, stacked: !!t.timeline });
    $("timeline").dataset.series = String(sets.length);
    if (!ch.dragSet) {
        ch.dragSet = true;
        let start = null;
        const canvas = $("timeline");
        canvas.addEventListener("mousedown", (e) => { start = e.offsetX; });
        canvas.addEventListener("mouseup", (e) => {
            if (start === null) return;
            const a = Math.min(start, e.offsetX), b = Math.max(start, e.offsetX);
            start = null;
            if (b - a < 4) return;
            const sx = charts.timeline.scales.x;
            const from = Math.max(0, sx.getValueForPixel(a)), to = Math.min(duration, sx.getValueForPixel(b));
            $("filters").elements.from.value = from.toFixed(3);
            $("filters").elements.to.value = to.toFixed(3);
            apply();
        });
    }
}

/* The line under the chart: RSS, the heap and the gap at the RSS peak, and
 * the top churn sites of the filtered scope (/data/ID/memory). Hidden when
 * the profile has no memory samples. */
async function loadMemory(q, my) {
    q.set("count", "3");
    const r = await api(`/data/${state.p}/memory?${q}`);
    if (my !== stamp) return;
    const box = $("memory"), m = r.memory;
    if (!m.samples) { box.hidden = true; box.dataset.unexplained = ""; return; }
    const p = m.peak;
    const churn = r.churn.map((c) => `<code>${nm(c)}</code> (${esc(c.location)}) ` +
        `${hbytes(c.churn_bytes_per_s)}/s, ${c.short_lived} short-lived`).join("; ");
    box.innerHTML = `<b>Memory not explained by the heap</b>: at the RSS peak ` +
        `(${hns(p.time_ns)}) RSS ${hbytes(p.rss)}, live heap ${hbytes(p.heap)}: ` +
        `the heap explains ${(100 * p.heap_share).toFixed(1)}%, ${hbytes(p.unexplained)} not explained` +
        (p.alloc_free !== undefined ? `; ${esc(m.allocator)}: ${hbytes(p.alloc_free)} of the arena not in use` : "") +
        (churn ? `. Top churn: ${churn}` : "");
    box.dataset.unexplained = String(p.unexplained);
    box.dataset.churn = r.churn.length ? r.churn[0].function : "";
    box.hidden = false;
}

/* ---- overview ------------------------------------------------------------------------ */

async function loadOverview(q, my) {
    const url = `/data/${state.p}/summary?${q}`;
    setQuery(url);
    const s = await api(url);
    if (my !== stamp) return;
    const card = (k, v, exact, sub) => `<div class="card"><div class="k">${k}</div>` +
        `<div class="v" title="${esc(exact)}">${v}</div><div class="s">${sub || ""}</div></div>`;
    const secs = s.duration_ns / 1e9;
    const cpu = s.cpu_samples ? card("CPU", hns(s.cpu_hz ? Math.round(s.cpu_samples / s.cpu_hz * 1e9) : 0),
        `${s.cpu_samples} samples at ${s.cpu_hz} Hz`, `${hcount(s.cpu_samples)} samples` +
        (s.cpu_dropped ? `, ${s.cpu_dropped} dropped` : "")) : card("CPU", "none", "", "no CPU samples");
    $("cards").innerHTML =
        card("program", `<code>${esc(s.title || s.program)}</code>`, s.title ? `${s.title} (${s.program})` : s.program,
             s.title ? `${esc(s.program)}, pid ${s.pid}` : `pid ${s.pid}`) +
        card("duration", hns(s.duration_ns), `${s.duration_ns} ns`) +
        card("allocated", hbytes(s.alloc_bytes), `${s.alloc_bytes} bytes`, `${hcount(s.alloc_blocks)} blocks`) +
        card("peak", hbytes(s.peak_bytes), `${s.peak_bytes} bytes`, `at ${hns(s.peak_time_ns)}`) +
        card("leaked", hbytes(s.leaked_bytes), `${s.leaked_bytes} bytes`, `${hcount(s.leaked_blocks)} blocks never freed`) +
        card("temporary", hcount(s.temporary_blocks), `${s.temporary_blocks} blocks`,
            s.alloc_blocks ? `${(100 * s.temporary_blocks / s.alloc_blocks).toFixed(1)}% of blocks` : "") + cpu +
        (secs > 0 ? card("allocation rate", `${hcount(Math.round(s.alloc_blocks / secs))}/s`, `${(s.alloc_blocks / secs).toFixed(1)} blocks per second`,
            `${hbytes(Math.round(s.alloc_bytes / secs))}/s`) +
        card("temporary rate", `${hcount(Math.round(s.temporary_blocks / secs))}/s`, `${(s.temporary_blocks / secs).toFixed(1)} temporary blocks per second`) : "");
    /* heaptrack_gui's summary: the top call sites by each figure */
    const tops = [["count", "most allocations", (x) => cn(x.count)], ["temporary", "most temporary", (x) => cn(x.temporary)],
        ["peak_bytes", "most held at the peak", (x) => cb(x.peak_bytes)], ["leaked_bytes", "most leaked", (x) => cb(x.leaked_bytes)]];
    const lists = await Promise.all(tops.map(([k]) => {
        const tq = new URLSearchParams(q);
        tq.set("sort_by", k);
        tq.set("order", "dsc");
        tq.set("count", "5");
        return api(`/data/${state.p}/sites?${tq}`);
    }));
    if (my !== stamp) return;
    $("top-lists").innerHTML = tops.map(([k, title, fig], i) => {
        const rows = lists[i].sites.filter((x) => x[k] > 0);
        return `<div><h3>${title}</h3><table class="data" data-by="${k}"><tbody>` + (rows.map((x) =>
            `<tr data-function="${esc(x.function)}">${cfn(x)}${fig(x)}</tr>`).join("") ||
            '<tr><td class="l" colspan="2">none</td></tr>') + `</tbody></table></div>`;
    }).join("");
}

/* heaptrack_gui's allocations and temporary allocations over time, and the
 * sizes: a part of the overview of its own (they read the scope's rows,
 * which takes longest; a failure leaves the figures above in place). */
async function loadOverviewCharts(q, my) {
    const aq = new URLSearchParams(q), tq = new URLSearchParams(q);
    aq.set("count", "6");
    tq.set("count", "6");
    tq.set("temporary", "1");
    const [al, te, sz] = await Promise.all([api(`/data/${state.p}/timeline_allocations?${aq}`),
        api(`/data/${state.p}/timeline_allocations?${tq}`), api(`/data/${state.p}/sizes?${q}`)]);
    if (my !== stamp) return;
    const mx = Math.max(duration, (al.xs[al.xs.length - 1] || 0) / 1e9);
    const a = siteSets(al), t = siteSets(te);
    lineChart("alloc-chart", a, { max: mx, stacked: true, count: true, ytitle: "blocks allocated" });
    $("alloc-chart").dataset.series = String(a.length);
    $("alloc-chart").dataset.total = String(al.total[al.total.length - 1] || 0);
    lineChart("temp-chart", t, { max: mx, stacked: true, count: true, ytitle: "temporary blocks" });
    $("temp-chart").dataset.series = String(t.length);
    $("temp-chart").dataset.total = String(te.total[te.total.length - 1] || 0);
    sizesChart("sizes-chart", sz.sizes);
}

/* ---- call sites ---------------------------------------------------------------------- */

async function loadSites(q, my) {
    q.set("sort_by", state.sort_by);
    q.set("order", state.order);
    q.set("count", "200");
    const url = `/data/${state.p}/sites?${q}`;
    setQuery(url);
    const r = await api(url);
    if (my !== stamp) return;
    $("sites-count").textContent = `${r.total_count} call sites` + (r.capped ? " (capped)" : "");
    for (const th of document.querySelectorAll("#sites th[data-sort]")) {
        th.classList.toggle("sorted", th.dataset.sort === state.sort_by);
        th.dataset.dir = th.dataset.sort === state.sort_by ? state.order : "";
    }
    const tb = $("sites").tBodies[0];
    tb.innerHTML = "";
    r.sites.forEach((s, i) => {
        const tr = document.createElement("tr");
        tr.className = "site";
        tr.innerHTML = `<td>${i + 1}</td>${cfn(s, badge(s))}` +
            `${cloc(s.location)}${cb(s.bytes)}${cn(s.count)}${cb(s.leaked_bytes)}` +
            `${cn(s.leaked_blocks)}${cb(s.peak_bytes)}${cn(s.temporary)}` +
            `<td title="coverage x fit">${s.score.toFixed(2)}</td>${ct(s.first)}${ct(s.last)}${cn(s.stacks)}`;
        tr.dataset.function = s.function;
        tr.dataset.location = s.location;
        tr.addEventListener("click", () => {
            for (const x of tb.querySelectorAll("tr.selected")) x.classList.remove("selected");
            tr.classList.add("selected");
            showSite(s.function, s.location).catch((e) => { showError(e); failPart($("site"), e); });
        });
        tb.appendChild(tr);
    });
    tb.dataset.top = r.sites.length ? r.sites[0].function : "";
}

/* The stacks of one site, each once, folded to the frames that differ. The
 * frames every stack shares at its inner end and at its outer end (main,
 * _start) are listed once, above, folded; each stack is then one line of
 * the frames only it has, innermost first (the first three, the count of
 * the others), that opens on a click to all of its frames. The allocator
 * wrappers the site skipped count (greyed): they are often all that
 * differs. The SHOWN largest stacks are listed, the others under one more
 * fold, so that the site fits a screen. */
const SHOWN = 12;
function foldedStacks(stacks) {
    const fr = stacks.map((s) => s.frames);
    const same = (a, b) => a && b && a.function === b.function && a.location === b.location;
    let inner = 0, outer = 0;
    if (fr.length > 1) {
        const min = Math.min(...fr.map((f) => f.length));
        while (inner < min && fr.every((f) => same(f[inner], fr[0][inner]))) inner++;
        while (outer < min - inner && fr.every((f) => same(f[f.length - 1 - outer], fr[0][fr[0].length - 1 - outer]))) outer++;
    }
    const li = (f) => `<li title="${esc(f.function)}"${f.skipped ? ' class="skipped"' : ""}><code>${esc(fname(f))}</code> <small>${esc(f.location)}${f.inlined ? " (inlined)" : ""}</small></li>`;
    const fold = (label, body) => `<div class="fold">&#9656; ${label}</div><div class="folded" hidden>${body}</div>`;
    const shared = (list, what) => list.length ? fold(`${list.length} ${what} frame${list.length > 1 ? "s" : ""} all ${fr.length} stacks share` +
        `: <code>${esc(fname(list[0]))}</code>${list.length > 1 ? ` &hellip; <code>${esc(fname(list[list.length - 1]))}</code>` : ""}`,
        `<ol class="frames">${list.map(li).join("")}</ol>`) : "";
    const line = (f, i) => {
        const s = stacks[i], own = f.slice(inner, f.length - outer);
        const head = own.slice(0, 3).map((x) => `<code title="${esc(x.function)}"${x.skipped ? ' class="skipped"' : ""}>${esc(fname(x))}</code>`).join(" &larr; ");
        return `<div class="stack" data-differ="${own.length}" data-id="${s.backtrace_id}">` +
            fold(`<b>${hbytes(s.bytes)}</b> in ${hcount(s.count)} blocks` + (s.leaked_bytes ? `, ${hbytes(s.leaked_bytes)} leaked` : "") +
                `: ${head || "(no frame of its own)"}${own.length > 3 ? ` &larr; &hellip; <small>(+${own.length - 3})</small>` : ""}`,
                `<small>stack ${s.backtrace_id}, all ${f.length} frames, innermost first</small><ol class="frames">${f.map(li).join("")}</ol>`) + `</div>`;
    };
    const lines = fr.map(line);
    return (fr.length > 1 ? `<div class="shared">${shared(fr[0].slice(0, inner), "inner")}${shared(fr[0].slice(fr[0].length - outer), "outer")}</div>` : "") +
        lines.slice(0, SHOWN).join("") +
        (lines.length > SHOWN ? fold(`${lines.length - SHOWN} more stacks`, lines.slice(SHOWN).join("")) : "");
}

/* One call site below the table, on one screen: its figures, its full name,
 * its line over time, histograms, its stacks folded and its threads. */
async function showSite(fn, loc) {
    const q = filterParams();
    q.set("function", fn);
    q.set("location", loc);
    const r = await api(`/data/${state.p}/site?${q}`);
    const f = r.figures[0];
    $("site").classList.remove("failed");
    $("site").hidden = false;
    $("site-name").textContent = `${fname(r)} (${loc})`;
    $("site-name").title = fn;
    $("site-full").textContent = r.short !== fn ? fn : "";
    $("site-figures").textContent = `${hbytes(f.bytes)} in ${hcount(f.count)} blocks, ` +
        `${hbytes(f.leaked_bytes)} leaked, ${hbytes(f.peak_bytes)} held at the peak, ${f.stacks} stacks`;
    $("site-stacks").innerHTML = foldedStacks(r.stacks);
    for (const x of $("site-stacks").querySelectorAll(".fold"))
        x.addEventListener("click", (e) => {
            e.stopPropagation();
            const open = x.nextElementSibling.hidden;
            x.nextElementSibling.hidden = !open;
            x.innerHTML = x.innerHTML.replace(open ? "\u25b8" : "\u25be", open ? "\u25be" : "\u25b8");
        });
    $("site-threads").tBodies[0].innerHTML = r.threads.map((t) =>
        `<tr><td>${t.id}</td><td class="l">${esc(t.name)} <small>${t.tid || ""}</small></td>` +
        `${cn(t.count)}${cb(t.bytes)}${cb(t.leaked_bytes)}</tr>`).join("");
    sizesChart("site-sizes", r.sizes);
    barChart("site-lifetimes", r.lifetimes.map((s) => s.label), r.lifetimes.map((s) => s.count), "blocks");
    const t = r.timeline;
    if (t.xs) lineChart("site-line", [{ label: fname(r), data: t.xs.map((x, i) => ({ x: x / 1e9, y: t.series[0].values[i] })),
        borderColor: "#c0392b", backgroundColor: "#c0392b55", fill: true, pointRadius: 0, borderWidth: 1 }],
        { max: duration });
    $("site").dataset.function = fn;
    $("site").scrollIntoView({ block: "start" });
}

/* ---- trees ----------------------------------------------------------------------------- */

/* Draws tree answer t into table el: one row per open node, indented, with
 * the inclusive and self figures; rows open and close on click. */
function drawTree(el, t, onPick) {
    const cols = t.columns;
    const fmt = (c, v) => c === "count" || c === "temporary" || c === "samples" ? hcount(v) : hbytes(v);
    const exact = (c, v) => `${v.toLocaleString("en")} ${c === "count" || c === "temporary" ? "blocks" : c === "samples" ? "samples" : "bytes"}`;
    const names = { bytes: "allocated", count: "blocks", leaked: "leaked", peak: "at peak", temporary: "temporary", samples: "samples" };
    el.tHead.innerHTML = `<tr><th class="l" rowspan="2">function</th><th class="l" rowspan="2">location</th>` +
        `<th colspan="${cols.length}">inclusive</th><th colspan="${cols.length}" class="self">self</th></tr><tr>` +
        cols.map((c) => `<th>${names[c]}</th>`).join("") + cols.map((c) => `<th class="self">${names[c]}</th>`).join("") + `</tr>`;
    const tb = el.tBodies[0];
    tb.innerHTML = "";
    const si = cols.indexOf(t.sort) < 0 ? 0 : cols.indexOf(t.sort);
    const total = t.total[si] || 1;
    function row(n, depth, after) {
        const tr = document.createElement("tr");
        const kids = n.children.length;
        /* deep rows keep their indent and give it back from the name's room */
        const indent = 0.4 + Math.min(depth, 40) * 0.5;
        tr.innerHTML = `<td class="l fn" title="${esc(n.function)}" style="padding-left:${indent}em;max-width:${Math.max(6, 26 - indent)}em">` +
            `<span class="tog">${kids ? "&#9656;" : "&middot;"}</span> ${esc(fname(n))}` +
            `<span class="share" style="width:${Math.max(1, Math.round(60 * n.incl[si] / total))}px"></span></td>` +
            `<td class="l loc" title="${esc(n.location)}"><small>${esc(n.location)}</small></td>` +
            cols.map((c, k) => `<td title="${exact(c, n.incl[k])}">${fmt(c, n.incl[k])}</td>`).join("") +
            cols.map((c, k) => `<td class="self" title="${exact(c, n.self[k])}">${n.self[k] ? fmt(c, n.self[k]) : ""}</td>`).join("");
        tr.dataset.depth = depth;
        tr.dataset.function = n.function;
        let open = false, rows = [];
        const close = () => { for (const r of rows) { if (r.closeAll) r.closeAll(); r.remove(); } rows = []; };
        tr.closeAll = close;
        tr.toggle = () => {
            if (!kids) return;
            if (open) { close(); open = false; tr.querySelector(".tog").innerHTML = "&#9656;"; return; }
            let at = tr;
            for (const c of n.children) { const r = row(c, depth + 1, at); rows.push(r); at = r; }
            open = true;
            tr.querySelector(".tog").innerHTML = "&#9662;";
        };
        tr.addEventListener("click", () => tr.toggle());
        if (onPick) tr.addEventListener("dblclick", (e) => { e.preventDefault(); onPick(n.function); });
        if (after) after.after(tr); else tb.appendChild(tr);
        return tr;
    }
    const tops = t.children.map((n) => row(n, 0, null));
    /* open the heaviest path all the way (children come heaviest first):
     * top-down down to the allocating frame, bottom-up the top site's
     * callers out to the outermost frame */
    let cur = tops[0], last = null;
    for (let d = 0; cur && d < 512; d++) {
        last = cur;
        cur.toggle();
        cur = cur.nextElementSibling && Number(cur.nextElementSibling.dataset.depth) === d + 1 ? cur.nextElementSibling : null;
    }
    if (last) {
        last.classList.add("hot");
        tb.dataset.hot = last.dataset.function;
        tb.dataset.hotDepth = last.dataset.depth;
        if (el.id === "tree" && !el.closest("[hidden]")) last.scrollIntoView({ block: "center" });
    }
    tb.dataset.rows = String(t.nodes);
    tb.dataset.top = t.children.length ? t.children[0].function : "";
    if (!t.children.length) tb.innerHTML = `<tr><td class="l" colspan="${2 + 2 * cols.length}">nothing in this scope</td></tr>`;
}

async function loadTree(q, my) {
    const kind = state.kind;
    $("tree-kind").value = kind;
    $("tree-sort").value = state.tsort;
    $("tree-function").value = state.tfn;
    q.set("kind", kind);
    if (kind === "callers" || kind === "callees") q.set("function", state.tfn);
    q.set("sort_by", state.tsort);
    q.set("count", "5000");
    const url = `/data/${state.p}/tree?${q}`;
    setQuery(url);
    const t = await api(url);
    if (my !== stamp) return;
    drawTree($("tree"), t, (fn) => { state.kind = "callers"; state.tfn = fn; apply(); });
}

/* ---- flamegraphs, leaks, threads --------------------------------------------------------- */

/* An iframe shows its flamegraph at the page's width: the SVG scales to the
 * frame (its viewBox) and the frame takes the height that gives; on a resize
 * it is drawn again at the new width. */
function fitSvg(el) {
    const doc = el.contentDocument, svg = doc && doc.documentElement;
    if (!svg || svg.nodeName !== "svg") return;
    const vb = (svg.getAttribute("viewBox") || "").split(/\s+/).map(Number);
    if (vb.length !== 4 || !(vb[2] > 0)) return;
    svg.setAttribute("width", "100%");
    svg.setAttribute("height", "100%");
    el.style.height = `${Math.ceil(el.clientWidth * vb[3] / vb[2]) + 4}px`;
    el.dataset.width = String(el.clientWidth);
}
function fitFrame(el) {
    el.addEventListener("load", () => { fitSvg(el); if (el.onFlame) el.onFlame(); });
}
let resizing = null;
window.addEventListener("resize", () => {
    clearTimeout(resizing);
    resizing = setTimeout(() => { fitSvg($("flame")); fitSvg($("cpu-flame")); }, 100);
});

/* The figure of a flamegraph's root frame ("all (N bytes, ...)"): the
 * server's total of what the graph weighs. */
function flameTotal(svgText) {
    const m = /<title>all \((\d+) /.exec(svgText);
    return m ? Number(m[1]) : null;
}
/* Highlights in the flamegraph shown the frames whose function matches the
 * search (the POSIX pattern read as a JavaScript one), and says how many and
 * the share of the graph in the stacks through them (the server's flamegraph
 * of those stacks, function_regex, against the whole). */
function highlightFlame(re, matched, total) {
    const doc = $("flame").contentDocument, box = $("flame-match");
    let n = 0;
    if (!doc) return;
    for (const g of doc.querySelectorAll("g")) {
        const t = g.querySelector("title"), r = g.querySelector("rect");
        if (!t || !r) continue;
        if (r.dataset.fill === undefined) r.dataset.fill = r.getAttribute("fill") || "";
        const name = t.textContent.replace(/ \([^()]*\)$/, "");
        const hit = re && re.test(name);
        r.setAttribute("fill", hit ? "#39a6e6" : r.dataset.fill);
        g.classList.toggle("hit", !!hit);
        if (hit) n++;
    }
    box.dataset.frames = String(n);
    if (!re) { box.innerHTML = ""; box.dataset.share = ""; return; }
    const share = total ? matched / total : 0;
    box.dataset.share = share.toFixed(4);
    const unit = state.mode === "cpu" ? (v) => `${hcount(v)} samples` : hbytes;
    box.innerHTML = `<b>${n} frame${n === 1 ? "" : "s"}</b> match <code>${esc($("search").value.trim())}</code>: ` +
        `the stacks through them weigh <b title="${matched} of ${total}">${unit(matched)}, ${(100 * share).toFixed(1)}%</b> of this graph`;
}

/* The flamegraph of the scope without the search, which highlights here
 * instead of narrowing. */
async function loadFlame(q, my) {
    $("flame-mode").value = state.mode;
    const pat = q.get("function_regex");
    q.delete("function_regex");
    q.set("mode", state.mode);
    const url = `/data/${state.p}/export/flamegraph?${q}`;
    setQuery(url);
    /* the SVG is fetched first, so that a bad filter shows its error */
    const whole = await api(url);
    let matched = null;
    if (pat) {
        const mq = new URLSearchParams(q);
        mq.set("function_regex", pat);
        matched = flameTotal(await api(`/data/${state.p}/export/flamegraph?${mq}`)) || 0;
    }
    if (my !== stamp) return;
    let re = null;
    if (pat) { try { re = new RegExp(pat); } catch (e) { re = new RegExp(pat.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")); } }
    const total = flameTotal(whole);
    const f = $("flame");
    await new Promise((done) => {
        const t = setTimeout(done, 15000);
        f.onFlame = () => { clearTimeout(t); highlightFlame(re, matched, total); done(); };
        if (f.getAttribute("src") !== url) f.src = url; else f.onFlame();
    });
}

async function loadLeaks(q, my) {
    q.set("count", "100");
    const url = `/data/${state.p}/leaks?${q}`;
    setQuery(url);
    const r = await api(url);
    if (my !== stamp) return;
    $("leaks").tBodies[0].innerHTML = r.leaks.map((l) =>
        `<tr><td title="coverage ${l.coverage}/${r.buckets}, fit ${l.fit}">${l.score.toFixed(2)}` +
        `${l.score >= 0.5 ? ' <span class="badge">leak</span>' : ""}</td>${cb(l.leaked_size)}${cn(l.leaked_count)}` +
        `${ct(tvns(l.first))}${ct(tvns(l.last))}${cfn(l)}` +
        `${cloc(l.location)}</tr>`).join("");
}

async function loadThreads(q, my) {
    const url = `/data/${state.p}/threads?${q}`;
    setQuery(url);
    const r = await api(url);
    if (my !== stamp) return;
    $("threads").tBodies[0].innerHTML = r.threads.map((t) =>
        `<tr><td>${t.id}</td><td>${t.tid}</td><td class="l">${esc(t.name)}</td>${cn(t.allocated_count)}` +
        `${cb(t.allocated_size)}${cn(t.leaked_count)}${cb(t.leaked_size)}</tr>`).join("");
}

/* ---- CPU ---------------------------------------------------------------------------------- */

async function loadCpu(q, my) {
    const url = `/data/${state.p}/cpu?${q}`;
    setQuery(url);
    const r = await api(url);
    if (my !== stamp) return;
    if (!r.samples) {
        $("cpu-figures").textContent = "";
        $("cpu-body").hidden = true;
        $("cpu-top").tBodies[0].innerHTML = "";
        $("error").textContent = "no CPU samples in this profile (record with RHEAPER_CPU_HZ=N)";
        return;
    }
    $("cpu-body").hidden = false;
    $("cpu-figures").textContent = `${hcount(r.samples)} samples at ${r.hz} Hz: ` +
        `${hns(Math.round(r.samples / r.hz * 1e9))} of CPU; ${r.dropped} sampling periods dropped`;
    $("cpu-top").tBodies[0].innerHTML = r.top.map((t, i) =>
        `<tr><td>${i + 1}</td>${cfn(t)}${cloc(t.location)}` +
        `${cn(t.samples)}<td>${t.percent.toFixed(1)}%</td>${ct(Math.round(t.seconds * 1e9))}</tr>`).join("");
    $("cpu-top").tBodies[0].dataset.top = r.top.length ? r.top[0].function : "";
    const tq = new URLSearchParams(q);
    tq.set("cpu", "1");
    tq.set("kind", "bottom-up");
    tq.set("count", "3000");
    const t = await api(`/data/${state.p}/tree?${tq}`);
    if (my !== stamp) return;
    drawTree($("cpu-tree"), t, null);
    const fq = new URLSearchParams(q);
    fq.set("mode", "cpu");
    const furl = `/data/${state.p}/export/flamegraph?${fq}`;
    if ($("cpu-flame").getAttribute("src") !== furl) $("cpu-flame").src = furl;
}

/* ---- compare ------------------------------------------------------------------------------- */

async function loadCompare(q, my) {
    const other = $("other").value;
    $("diff-by").value = state.by;
    $("noise").value = state.noise;
    if (other === "") {
        $("diff").tBodies[0].innerHTML = '<tr><td class="l" colspan="13">serve two profiles to compare them: rheaper serve a.db b.db</td></tr>';
        return;
    }
    const dq = new URLSearchParams(q);
    dq.set("count", "500");
    dq.set("by", state.by);
    dq.set("noise", state.noise);
    const url = `/data/${state.p}/diff/${other}?${dq}`;
    setQuery(url);
    const [r, ta, tb] = await Promise.all([api(url), api(`/data/${state.p}/timeline?${q}`),
        api(`/data/${other}/timeline?${q}`)]);
    if (my !== stamp) return;
    const pa = profiles.find((x) => x.id === state.p), pb = profiles.find((x) => x.id === other);
    $("diff-peaks").innerHTML = `peak of A (${esc(pa ? pa.label : state.p)}): <b title="${r.peak.a} bytes">${hbytes(r.peak.a)}</b> at ${hns(r.peak.a_time_ns)}; ` +
        `peak of B (${esc(pb ? pb.label : other)}): <b title="${r.peak.b} bytes">${hbytes(r.peak.b)}</b> at ${hns(r.peak.b_time_ns)} ` +
        `(<b>${sign(r.peak.b - r.peak.a, hbytes)}</b>); changes within ${r.noise}% of the larger side are hidden`;
    const mx = Math.max(ta.xs[ta.xs.length - 1] || 0, tb.xs[tb.xs.length - 1] || 0) / 1e9;
    lineChart("diff-chart", [
        { label: "A", data: ta.xs.map((x, i) => ({ x: x / 1e9, y: ta.max_size[i] })), borderColor: "#2e86c1", pointRadius: 0, borderWidth: 1.5 },
        { label: "B", data: tb.xs.map((x, i) => ({ x: x / 1e9, y: tb.max_size[i] })), borderColor: "#c0392b", pointRadius: 0, borderWidth: 1.5 }],
        { max: mx });
    const show = $("show-same").checked;
    for (const th of document.querySelectorAll("#diff th[data-by]")) th.classList.toggle("sorted", th.dataset.by === state.by);
    const d = (v) => `<td class="${v > 0 ? "up" : v < 0 ? "down" : ""}" title="${v.toLocaleString("en")} bytes">${v ? sign(v, hbytes) : ""}</td>`;
    const dn = (v) => `<td class="${v > 0 ? "up" : v < 0 ? "down" : ""}" title="${v.toLocaleString("en")}">${v ? sign(v, hcount) : ""}</td>`;
    const rows = r.sites.filter((s) => show || s.status !== "same");
    $("diff").tBodies[0].innerHTML = rows.map((s) =>
        `<tr class="${s.status}"><td class="l"><span class="st ${s.status}">${s.status}</span></td>${cfn(s)}` +
        `${cloc(s.location)}${d(s.delta.peak_size)}${d(s.delta.size)}${dn(s.delta.count)}${d(s.delta.leaked_size)}` +
        `${cb(s.a.peak_size)}${cb(s.b.peak_size)}${cb(s.a.size)}${cb(s.b.size)}${cb(s.a.leaked_size)}${cb(s.b.leaked_size)}</tr>`).join("") ||
        '<tr><td class="l" colspan="13">no call site changed beyond the noise threshold</td></tr>';
    $("diff").tBodies[0].dataset.top = rows.length ? rows[0].function : "";
}

/* ---- allocations (bytehound's list) ---------------------------------------------------------- */

/* One page of the scope's allocations (/allocations: bytehound's filters
 * are the form's), sorted as chosen; a click on a row shows its stack. */
async function loadAllocs(q, my) {
    $("allocs-sort").value = state.asort;
    $("allocs-order").value = state.aorder;
    q.set("sort_by", state.asort);
    q.set("order", state.aorder);
    q.set("count", "40");
    q.set("skip", state.askip);
    const url = `/data/${state.p}/allocations?${q}`;
    setQuery(url);
    const r = await api(url);
    if (my !== stamp) return;
    const skip = Number(state.askip);
    $("allocs-count").textContent = `${r.total_count.toLocaleString("en")} allocations; ` +
        (r.allocations.length ? `${skip + 1} to ${skip + r.allocations.length}` : "none here");
    $("allocs-prev").disabled = skip <= 0;
    $("allocs-next").disabled = skip + r.allocations.length >= r.total_count;
    const inner = (a) => [...a.backtrace].reverse().find((f) => !f.allocator) || { function: "?" };
    const tb = $("allocs").tBodies[0];
    tb.innerHTML = r.allocations.map((a, i) => {
        const t = tvns(a.timestamp_relative), d = a.deallocation ? tvns(a.deallocation.timestamp) - tvns(a.timestamp) : null;
        return `<tr data-i="${i}" data-size="${a.size}" data-t="${t}"><td>${skip + i + 1}</td>${ct(t)}${cb(a.size)}<td><code>${esc(a.address_s)}</code></td>` +
            `<td>${a.thread}</td>${d === null ? '<td title="never freed">leaked</td>' : ct(d)}${cfn(inner(a))}</tr>`;
    }).join("") || '<tr><td class="l" colspan="7">no allocation in this scope</td></tr>';
    tb.dataset.rows = String(r.allocations.length);
    for (const tr of tb.querySelectorAll("tr[data-i]"))
        tr.addEventListener("click", () => {
            for (const x of tb.querySelectorAll("tr.selected")) x.classList.remove("selected");
            tr.classList.add("selected");
            const a = r.allocations[Number(tr.dataset.i)];
            $("alloc-stack").innerHTML = `<h3>Allocation of ${hbytes(a.size)} at ${hns(tvns(a.timestamp_relative))} <small>(thread ${a.thread}; innermost frame first)</small></h3>` +
                `<ol>${[...a.backtrace].reverse().map((f) => `<li title="${esc(f.function)}">${esc(fname(f))}` +
                    ` <small>${esc(f.source ? `${base(f.source)}:${f.line}` : f.library ? base(f.library) : "")}${f.allocator ? " (allocator)" : ""}</small></li>`).join("")}</ol>`;
            $("alloc-stack").dataset.frames = String(a.backtrace.length);
        });
    $("alloc-stack").innerHTML = "";
}

/* ---- state ----------------------------------------------------------------------------------- */

function pageUrl() {
    const q = filterParams();
    q.set("p", state.p);
    q.set("tab", state.tab);
    for (const k of ["sort_by", "order", "kind", "tfn", "tsort", "mode", "by", "noise", "names", "asort", "aorder", "askip"])
        if (state[k] !== "") q.set(k, state[k]);
    if ($("other").value !== "") q.set("other", $("other").value);
    return "?" + q.toString();
}

async function apply() {
    const my = ++stamp;
    clearErrors();
    unfail();
    history.replaceState(null, "", pageUrl());
    for (const b of document.querySelectorAll("#tabs button"))
        b.classList.toggle("on", b.dataset.tab === state.tab);
    for (const s of document.querySelectorAll("section.tab"))
        s.hidden = s.id !== "tab-" + state.tab;
    $("chart-box").hidden = state.tab === "compare" || state.tab === "cpu";
    const p = profiles.find((x) => x.id === state.p);
    if (p) {
        duration = (p.runtime.secs + p.runtime.fract_nsecs / 1e9);
        $("meta").textContent = `${p.label}: ${hcount(p.allocations)} allocations in ${hns(Math.round(duration * 1e9))}, ` +
            `${hbytes(p.final_allocated)} never freed`;
        $("meta").title = `${p.executable} (${p.path})`;
    }
    const active = filterParams();
    active.delete("function_regex");
    $("filter-summary").textContent = [...active.keys()].length ? `(${[...active].map(([k, v]) => `${k}=${v}`).join(", ")})` : "";
    document.body.dataset.ready = "";
    const loads = [];
    /* a part whose request fails is cleared and greyed (failPart) */
    const guard = (pr, part) => loads.push(pr.catch((e) => { if (my === stamp) { showError(e); failPart(part, e); throw e; } }));
    if (!$("chart-box").hidden) {
        guard(loadTimeline(filterParams(), my), $("chart-box"));
        guard(loadMemory(filterParams(), my), $("chart-box"));
    }
    const q = filterParams();
    const view = { overview: loadOverview, sites: loadSites, tree: loadTree, flame: loadFlame,
        leaks: loadLeaks, cpu: loadCpu, threads: loadThreads, compare: loadCompare, allocs: loadAllocs }[state.tab];
    if (view) guard(view(q, my), $("tab-" + state.tab));
    if (state.tab === "overview") guard(loadOverviewCharts(filterParams(), my), $("overview-charts"));
    const res = await Promise.allSettled(loads);
    if (my === stamp) document.body.dataset.ready = res.some((x) => x.status === "rejected") ? "error" : "1";
}

/* Names the profiles so that they can be told apart: the shortest end of
 * each path that no other profile's path ends with (two profile.db in
 * different directories: "a/profile.db" and "b/profile.db"), and the
 * program. Sets p.label. */
function nameProfiles(list) {
    const parts = list.map((p) => String(p.path || p.id).split("/").filter((x) => x !== ""));
    list.forEach((p, i) => {
        let k = 1;
        const tail = (a, n) => a.slice(Math.max(0, a.length - n)).join("/");
        while (k < parts[i].length && parts.some((o, j) => j !== i && tail(o, k) === tail(parts[i], k))) k++;
        p.label = `${tail(parts[i], k)} (${p.title || base(p.executable)})`;
    });
}

async function init() {
    const u = new URLSearchParams(location.search);
    for (const k of Object.keys(state)) if (u.get(k) !== null) state[k] = u.get(k);
    const sortable = [...document.querySelectorAll("#sites th[data-sort]")].map((th) => th.dataset.sort);
    if (!sortable.includes(state.sort_by)) state.sort_by = "bytes";
    fitFrame($("flame"));
    fitFrame($("cpu-flame"));
    const form = $("filters");
    for (const name of FILTERS) {
        if (name === "function_regex") { $("search").value = u.get(name) || ""; continue; }
        const el = form.elements[name];
        if (el.type === "checkbox") el.checked = u.get(name) === "1";
        else if (u.get(name) !== null) el.value = u.get(name);
    }
    if ([...u.keys()].some((k) => FILTERS.includes(k) && k !== "function_regex")) $("filter-box").open = true;
    try { profiles = await api("/list"); } catch (e) { showError(e); return; }
    nameProfiles(profiles);
    $("profile").innerHTML = profiles.map((p) =>
        `<option value="${esc(p.id)}" title="${esc(p.path)}">${esc(p.id)}: ${esc(p.label)}</option>`).join("");
    if (!profiles.some((p) => p.id === state.p) && profiles.length) state.p = profiles[0].id;
    $("profile").value = state.p;
    const others = profiles.filter((p) => p.id !== state.p);
    $("other").innerHTML = others.length ? others.map((p) =>
        `<option value="${esc(p.id)}" title="${esc(p.path)}">${esc(p.id)}: ${esc(p.label)}</option>`).join("") : '<option value="">(none)</option>';
    if (u.get("other") && others.some((p) => p.id === u.get("other"))) $("other").value = u.get("other");

    form.addEventListener("submit", (e) => { e.preventDefault(); apply(); });
    form.addEventListener("change", (e) => { cause = e.target; state.askip = "0"; apply(); });
    $("reset").addEventListener("click", () => { form.reset(); $("search").value = ""; apply(); });
    let typing = null;
    $("search").addEventListener("input", () => { clearTimeout(typing); typing = setTimeout(() => { cause = $("search"); apply(); }, 300); });
    $("search").addEventListener("keydown", (e) => { if (e.key === "Enter") { clearTimeout(typing); cause = $("search"); apply(); } });
    $("profile").addEventListener("change", () => { state.p = $("profile").value; location.search = pageUrl(); });
    $("other").addEventListener("change", () => apply());
    for (const b of document.querySelectorAll("#tabs button"))
        b.addEventListener("click", () => { state.tab = b.dataset.tab; cause = null; apply(); });
    for (const th of document.querySelectorAll("#sites th[data-sort]"))
        th.addEventListener("click", () => {
            if (state.sort_by === th.dataset.sort) state.order = state.order === "dsc" ? "asc" : "dsc";
            else { state.sort_by = th.dataset.sort; state.order = ["function", "location"].includes(th.dataset.sort) ? "asc" : "dsc"; }
            apply();
        });
    for (const th of document.querySelectorAll("#diff th[data-by]"))
        th.addEventListener("click", () => { state.by = th.dataset.by; apply(); });
    $("tree-kind").addEventListener("change", () => { state.kind = $("tree-kind").value; apply(); });
    $("tree-sort").addEventListener("change", () => { state.tsort = $("tree-sort").value; apply(); });
    $("tree-function").addEventListener("change", () => { state.tfn = $("tree-function").value.trim(); apply(); });
    $("flame-mode").addEventListener("change", () => { state.mode = $("flame-mode").value; apply(); });
    $("diff-by").addEventListener("change", () => { state.by = $("diff-by").value; apply(); });
    $("noise").addEventListener("change", () => { state.noise = $("noise").value.trim(); apply(); });
    $("show-same").addEventListener("change", () => apply());
    $("full-names").checked = state.names === "full";
    $("full-names").addEventListener("change", () => { state.names = $("full-names").checked ? "full" : ""; apply(); });
    $("allocs-sort").addEventListener("change", () => { state.asort = $("allocs-sort").value; state.askip = "0"; apply(); });
    $("allocs-order").addEventListener("change", () => { state.aorder = $("allocs-order").value; state.askip = "0"; apply(); });
    $("allocs-prev").addEventListener("click", () => { state.askip = String(Math.max(0, Number(state.askip) - 40)); apply(); });
    $("allocs-next").addEventListener("click", () => { state.askip = String(Number(state.askip) + 40); apply(); });
    await apply();
}

init();
