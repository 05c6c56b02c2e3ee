# convert_test.sh: the converter's outputs are as private as their inputs and
# nothing it leaves behind can trip a later run. In a root-owned 1777
# directory: a 0600 rip converts into a 0600 database (umask 022), a 0640 one
# into 0640; a conversion killed with SIGKILL leaves its temp database, which
# the next conversion to the same path removes (it holds no lock: the killed
# one's), while a live conversion's locked temp file, the attacker's files at
# temp names (a FIFO, a symlink, an SQLite file of nobody's) are left alone
# and block nothing; a FIFO given as a rip or to push fails at once.
#
# usage: sh convert_test.sh BIN SRC WORK
BIN=$1 SRC=$2 W=$3 CASE=convert
. "$SRC/lib.sh"
sec_setup
require_tool sqlite3 sqlite3
require_tool flock util-linux
RH_DUMP="$W/conv.err"

# a profile big enough that its conversion can be killed midway
cat >"$W/big.c" <<'C'
#include <stdlib.h>
static void *volatile keep[64];
__attribute__((noinline)) void *fa(size_t n) { return malloc(n); }
__attribute__((noinline)) void *fb(size_t n) { return fa(n + 1); }
int main(void)
{
    for (long i = 0; i < 400000; i++) {
        void *p = (i & 1) ? fa(i % 500 + 1) : fb(i % 300 + 1);
        free(keep[i & 63]);
        keep[i & 63] = p;
    }
    return 0;
}
C
"$BIN/rheaper-cc" -O1 -o "$W/big" "$W/big.c" || fail "rheaper-cc failed"
mkdir "$W/rec"
(cd "$W/rec" && RHEAPER_ENABLE=1 timeout 60 ../big) || fail "big failed"
mv "$W"/rec/rip-* "$T/big.rip"
expect "the rip's mode" "$(stat -c %a "$T/big.rip")" 600

# ---- modes ----
timeout 60 "$BIN/rheaper-convert" "$T/big.rip" "$T/a.db" >/dev/null 2>"$W/conv.err" ||
    fail "convert failed"
expect "a 0600 rip's database under umask 022" "$(stat -c %a "$T/a.db")" 600
rows=$(sqlite3 "$T/a.db" 'SELECT count(*) FROM allocations')
echo "convert: $rows allocations"
cp "$T/big.rip" "$T/g.rip"
chmod 0640 "$T/g.rip"
timeout 60 "$BIN/rheaper-convert" "$T/g.rip" "$T/g.db" >/dev/null 2>&1 || fail "convert 0640 failed"
expect "a 0640 rip's database" "$(stat -c %a "$T/g.db")" 640
expect "the attacker cannot read the database" "$(AS cat "$T/a.db" >/dev/null 2>&1; echo $?)" 1

# ---- the attacker's files at temp names ----
AS mkfifo "$T/b.db.tmp.FIFO00"
AS ln -s "$W/victim" "$T/b.db.tmp.LINK00"
echo secret >"$W/victim"
AS cp "$T/a.db" "$T/b.db.tmp.NOBODY" 2>/dev/null || AS sh -c "printf 'SQLite format 3\000' > '$T/b.db.tmp.NOBODY'"
# a live conversion's temp file: SQLite's header, root's, locked
cp "$T/a.db" "$T/b.db.tmp.LIVE00"
(exec 9<"$T/b.db.tmp.LIVE00" && flock 9 && exec sleep 30) >/dev/null 2>&1 &
LOCK=$! # the sleep itself, holding the lock
sleep 0.5

# ---- a conversion killed midway ----
# (not under timeout: the kill must reach the converter itself)
"$BIN/rheaper-convert" "$T/big.rip" "$T/b.db" >/dev/null 2>&1 &
CV=$!
i=0
while [ $i -lt 400 ]; do
    n=$(ls "$T" | grep -c '^b\.db\.tmp\.......$')
    [ "$n" -ge 5 ] && break
    sleep 0.005
    i=$((i + 1))
done
sleep 0.05
kill -KILL $CV
wait $CV 2>/dev/null
left=$(ls "$T" | grep '^b\.db\.tmp\.' | grep -v 'FIFO00\|LINK00\|NOBODY\|LIVE00')
echo "killed conversion left: ${left:-nothing}"
[ -n "$left" ] && ok "the killed conversion left its temp database" ||
    echo "note: the conversion ended before the kill; the rerun checks still hold"
expect "no database from the killed run" "$(ls "$T" | grep -c '^b\.db$')" 0

t0=$(date +%s)
timeout 60 "$BIN/rheaper-convert" "$T/big.rip" "$T/b.db" >/dev/null 2>"$W/conv.err"
expect "the rerun's exit status" "$?" 0
echo "rerun: $(($(date +%s) - t0)) s; said: $(grep -c removed "$W/conv.err") removal line(s)"
[ -n "$left" ] && expect "the rerun said what it removed" "$(grep -c "removed $T/$left" "$W/conv.err")" 1
expect "the rerun's rows" "$(sqlite3 "$T/b.db" 'SELECT count(*) FROM allocations')" "$rows"
expect "the rerun's mode" "$(stat -c %a "$T/b.db")" 600
expect "temp files left: the attacker's and the live one only" \
    "$(ls "$T" | grep '^b\.db\.tmp\.' | sort | tr '\n' ' ')" \
    "b.db.tmp.FIFO00 b.db.tmp.LINK00 b.db.tmp.LIVE00 b.db.tmp.NOBODY "
expect "the symlink's target untouched" "$(cat "$W/victim")" secret
kill $LOCK 2>/dev/null
wait $LOCK 2>/dev/null

# ---- FIFOs where inputs are expected ----
AS mkfifo "$T/fifo.rip"
timeout 10 "$BIN/rheaper-convert" "$T/fifo.rip" "$T/f.db" >/dev/null 2>"$W/fifo.err"
expect "convert of a FIFO: refused at once (124 is a hang)" "$?" 1
expect "convert of a FIFO: says so" "$(grep -c 'not a regular file' "$W/fifo.err")" 1
timeout 10 "$BIN/rheaper" push "$T/fifo.rip" --clickhouse http://127.0.0.1:9 >/dev/null 2>"$W/push.err"
expect "push of a FIFO: refused at once (124 is a hang)" "$?" 1
expect "push of a FIFO: says so" "$(grep -c 'FIFO' "$W/push.err")" 1
timeout 10 "$BIN/rheaper" serve "$T/fifo.rip" --listen 127.0.0.1:0 >/dev/null 2>"$W/serve.err"
expect "serve of a FIFO: refused at once (124 is a hang)" "$?" 1
checks_done
