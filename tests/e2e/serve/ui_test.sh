#!/bin/sh
# ui_test.sh: headless Chromium loads the web UI of rheaper serve, with a
# filter applied through the page's URL (as the form writes it), and the page
# must show the expected top call site; the compare tab must show the known
# leak of the second run. Without chromium it fails under CI=true and skips (77) elsewhere
# (tests/lib/require.sh).
#
# usage: ui_test.sh BIN SRC WORK
# RH_UI_SCREENSHOT=FILE also writes a screenshot of the page (docs/rest-api.md's).
BIN=$1 SRC=$2 W=$3
. "$SRC/lib.sh"
. "$(dirname "$0")/../../lib/require.sh"
command -v chromium-browser >/dev/null 2>&1 || require_tool chromium chromium
CHROMIUM=$(command -v chromium || command -v chromium-browser)
rh_setup
rh_serve "$W/a.db" "$W/b.db"

dom() { # URL-QUERY OUT: the page's DOM once its scripts ran
    timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
        --user-data-dir="$W/chromium" --virtual-time-budget=15000 --dump-dom "$B/$1" \
        >"$2" 2>"$W/chromium.err"
}

# the call sites whose stacks match "group", biggest first: group_hit
dom "?function_regex=group&sort_by=only_matched.size&order=dsc" "$W/sites.html"
eq "page ready" "$(grep -o 'data-ready="[a-z0-9]*"' "$W/sites.html")" 'data-ready="1"'
eq "top site" "$(grep -o 'data-top="[^"]*"' "$W/sites.html")" 'data-top="group_hit"'
eq "first row" "$(grep -o '<td class="fn">[^<]*</td>' "$W/sites.html" | head -1)" '<td class="fn">group_hit</td>'
eq "rows" "$(grep -o '<td class="fn">' "$W/sites.html" | wc -l)" \
    "$(DB=$W/a.db sq "SELECT count(DISTINCT id) FROM backtraces WHERE sym GLOB '*group*'")"
eq "the query URL is shown" "$(grep -c 'allocation_groups?function_regex=group' "$W/sites.html" | awk '{print ($1 > 0)}')" 1

# another filter: leaked blocks of at least 1000 bytes, by count: big_block
dom "?lifetime=only_leaked&size_min=1000&sort_by=only_matched.allocated_count&order=dsc" "$W/big.html"
eq "filtered top site" "$(grep -o 'data-top="[^"]*"' "$W/big.html")" 'data-top="big_block"'
eq "form keeps the filter" "$(grep -c 'name="size_min" size="7"' "$W/big.html")" 1

# compare the two runs: extra_leak appeared, few_leaks grew
dom "?tab=compare&other=1&p=0" "$W/cmp.html"
eq "compare: appeared" "$(grep -o '<tr class="appeared"><td>appeared</td><td>[a-z_]*' "$W/cmp.html" | sed 's/.*<td>//')" extra_leak
eq "compare: grew" "$(grep -o '<tr class="grew"><td>grew</td><td>[a-z_]*' "$W/cmp.html" | sed 's/.*<td>//')" few_leaks

if [ -n "${RH_UI_SCREENSHOT:-}" ]; then
    timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars \
        --user-data-dir="$W/chromium" --virtual-time-budget=15000 --window-size=1280,1100 \
        --screenshot="$RH_UI_SCREENSHOT" "$B/?sort_by=only_matched.size&order=dsc" 2>/dev/null
fi
rh_stop
rh_done
