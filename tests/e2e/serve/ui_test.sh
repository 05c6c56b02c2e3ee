#!/bin/sh
# ui_test.sh: headless Chromium loads the web UI of rheaper serve, with a
# filter applied through the page's URL (as the form writes it), and the page
# must show the expected top call site; the compare tab must show the known
# leak of the second run. Without chromium it fails under CI=true and skips (77) elsewhere
# (tests/lib/require.sh).
#
# usage: ui_test.sh BIN SRC WORK
# RH_UI_SCREENSHOT=FILE also writes a screenshot of the page.
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
dom "?tab=sites&function_regex=group&sort_by=bytes&order=dsc" "$W/sites.html"
eq "page ready" "$(grep -o 'data-ready="[a-z0-9]*"' "$W/sites.html")" 'data-ready="1"'
eq "top site" "$(grep -o 'data-top="[^"]*"' "$W/sites.html" | head -1)" 'data-top="group_hit"'
eq "first row" "$(grep -o '<tr class="site" data-function="[^"]*"' "$W/sites.html" | head -1)" '<tr class="site" data-function="group_hit"'
# one row per call site (function and line) whose stacks match
eq "rows" "$(grep -o '<tr class="site"' "$W/sites.html" | wc -l)" \
    "$(DB=$W/a.db sq "SELECT count(DISTINCT b.sym || ':' || b.line) FROM stacks s JOIN backtraces b ON b.id = s.id AND b.frame_no = s.callsite WHERE s.id IN (SELECT id FROM backtraces WHERE sym GLOB '*group*') AND s.id IN (SELECT bt FROM stack_stats WHERE count > 0)")"
eq "the query URL is shown" "$(grep -c 'sites?function_regex=group' "$W/sites.html" | awk '{print ($1 > 0)}')" 1

# another filter: leaked blocks of at least 1000 bytes, by count: big_block
dom "?tab=sites&lifetime=only_leaked&size_min=1000&sort_by=count&order=dsc" "$W/big.html"
eq "filtered top site" "$(grep -o 'data-top="[^"]*"' "$W/big.html" | head -1)" 'data-top="big_block"'
eq "form keeps the filter" "$(grep -c 'name="size_min" size="7"' "$W/big.html")" 1

# compare the two runs by leaked bytes: extra_leak appeared, few_leaks grew
dom "?tab=compare&other=1&p=0&by=leaked" "$W/cmp.html"
eq "compare: appeared" "$(grep -o '<tr class="appeared"><td class="l"><span class="st appeared">appeared</span></td><td class="fn l"[^>]*>[a-z_]*' "$W/cmp.html" | sed 's/.*>//')" extra_leak
eq "compare: grew" "$(grep -o '<tr class="grew"><td class="l"><span class="st grew">grew</span></td><td class="fn l"[^>]*>[a-z_]*' "$W/cmp.html" | sed 's/.*>//')" few_leaks

if [ -n "${RH_UI_SCREENSHOT:-}" ]; then
    timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars \
        --user-data-dir="$W/chromium" --virtual-time-budget=15000 --window-size=1280,1100 \
        --screenshot="$RH_UI_SCREENSHOT" "$B/?tab=sites&sort_by=bytes&order=dsc" 2>/dev/null
fi
rh_stop
rh_done
