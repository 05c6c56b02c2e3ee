#!/bin/sh
# webui_redraw.sh: a web UI view's redraw after a search, end to end, and the
# server's peak resident memory (docs/benchmarks.md "rheaper serve").
#
#   sh bench/webui_redraw.sh [--rheaper BIN] [--runs N] [--budget-ms MS] [--sites] PROFILE.db
#
# Starts `BIN serve PROFILE.db --no-cache` (every redraw computes its answers;
# default BIN: build/bin/rheaper; --budget-ms passes the server's time budget,
# default its own 10 s), runs webui_redraw.mjs in headless Chromium:
# per view (overview, call sites, top-down tree) N searches (default 5), each
# for another function of the scale workload (bench/wl_scale.c: step_0 ..
# step_7, so no search finds the scope the previous one built), the time from
# the Enter key to the view drawn again. With --sites it also times opening
# each call site's detail (/site, N rounds over the sites by bytes, unfiltered,
# with curl). Then prints the server's VmHWM from /proc/PID/status and the
# load average before and after. Timings are printed, never checked.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
bin=$root/build/bin/rheaper runs=5 sites=0 budget=
while [ $# -gt 1 ]; do
    case $1 in
    --rheaper) bin=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --sites) sites=1; shift ;;
    --budget-ms) budget="--budget-ms $2"; shift 2 ;;
    *) break ;;
    esac
done
[ $# -eq 1 ] || { echo "usage: webui_redraw.sh [--rheaper BIN] [--runs N] [--budget-ms MS] [--sites] PROFILE.db" >&2; exit 2; }
db=$1
chromium=$(command -v chromium || command -v chromium-browser || true)
[ -n "$chromium" ] && command -v node >/dev/null 2>&1 ||
    { echo "FAIL: chromium and node are needed (Debian packages chromium, nodejs)" >&2; exit 1; }
out=$(mktemp -d)
trap 'kill "$spid" 2>/dev/null || true; rm -rf "$out"' EXIT
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$bin" serve "$db" --no-cache $budget --listen 127.0.0.1:0 >"$out/serve.out" 2>"$out/serve.err" &
spid=$!
port=
for _ in $(seq 1 300); do
    port=$(sed -n 's/.*http:\/\/127\.0\.0\.1:\([0-9]*\)\/.*/\1/p' "$out/serve.out")
    [ -n "$port" ] && break
    kill -0 "$spid" 2>/dev/null || break
    sleep 0.1
done
[ -n "$port" ] || { echo "FAIL: the server did not start: $(cat "$out/serve.err")"; exit 1; }
base=http://127.0.0.1:$port
rc=0
node "$here/webui_redraw.mjs" "$chromium" "$base" "$runs" \
    '^step_3$' '^step_5$' '^step_1$' '^step_7$' '^step_0$' '^step_6$' '^step_2$' '^step_4$' || rc=1
if [ "$sites" = 1 ]; then
    curl -s "$base/data/0/sites?sort_by=bytes&order=dsc&count=8" |
        sed -n 's/.*"function":"\([^"]*\)","short":"[^"]*","location":"\([^"]*\)".*/\1 \2/p' >"$out/sites"
    : >"$out/site.ms"
    for r in $(seq 1 "$runs"); do
        while read -r fn loc; do
            curl -s -o /dev/null -w '%{time_total}\n' "$base/data/0/site?function=$fn&location=$loc" >>"$out/site.ms"
        done <"$out/sites"
    done
    sort -n "$out/site.ms" | awk '{ v[NR] = $1 } END { if (NR) printf "site detail: median %.3f s min %.3f s max %.3f s (%d requests)\n", (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[1], v[NR], NR }'
fi
echo "serve $(grep VmHWM "/proc/$spid/status" | tr -s ' \t' ' ')"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $rc
