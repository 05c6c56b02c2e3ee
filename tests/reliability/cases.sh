# cases.sh: the cases of run.sh, one function each (sourced; see run.sh for
# the helpers: prog, convert_all, check_expect, eq, ok, bad, skip, meta).

# ---- crash safety -----------------------------------------------------------

# crash SIGNAL-NAME STATUS: the program dies; its profile converts with exit 0,
# one warning line naming the cut, and every fact it stated holds.
crash() {
    prog "$helpers/rel_crash" "$1"
    eq "exit status of a program ended by $1" "$rc" "$2"
    eq "profiles written" "$(nrips)" 1
    convert_all --loud
    eq "converter warning lines" "$(wc -l < "$w/conv.err" | tr -d ' ')" 1
    yes_ "the converter's line says the profile was cut" grep -q 'cut short' "$w/conv.err"
    check_expect
}
case_crash_sigkill() { crash sigkill 137; }
case_crash_abort() { crash abort 134; }
case_crash_segv() { crash segv 139; }

# ---- faults around the program ----------------------------------------------

# A missing profile directory: the program runs as usual, one warning line.
case_fault_missing_dir() {
    prof=$w/does-not-exist
    prog "$helpers/rel_faults" workload
    eq "exit status" "$rc" 0
    eq "runtime lines" "$(rh_lines)" 1
    yes_ "the line names the directory" grep -q "does-not-exist" "$w/err"
    yes_ "no directory was created" test ! -e "$prof"
}

# A read-only profile directory (as root, the program runs as nobody, since
# root writes anyway).
case_fault_readonly_dir() {
    chmod 0555 "$prof"
    chmod 0777 "$w"
    : > "$w/expect.txt"; chmod 0666 "$w/expect.txt"
    if [ "$(id -u)" -eq 0 ]; then
        command -v setpriv > /dev/null || skip "setpriv (util-linux) is needed to drop root"
        prog setpriv --reuid=nobody --regid=nogroup --clear-groups "$helpers/rel_faults" workload
    else
        prog "$helpers/rel_faults" workload
    fi
    eq "exit status" "$rc" 0
    eq "runtime lines" "$(rh_lines)" 1
    yes_ "the line says why" grep -q "Permission denied" "$w/err"
    eq "files in the read-only directory" "$(ls -A "$prof" | wc -l | tr -d ' ')" 0
}

# grow_case: the program fills what it may write; tracking stops with one
# line, the program finishes, and the profile holds a prefix of its events.
grow_case() {
    eq "exit status" "$rc" 0
    eq "runtime lines" "$(rh_lines)" 1
    yes_ "the line says tracking stopped" grep -q "tracking stopped" "$w/err"
    eq "profiles written" "$(nrips)" 1
    convert_all
    check_expect
}

# A full disk: a 128 KiB tmpfs as the profile directory (root only).
case_fault_full_disk() {
    [ "$(id -u)" -eq 0 ] || skip "mounting a small tmpfs needs root"
    mount -t tmpfs -o size=128k rheaper-rel "$prof" 2> "$w/mount.err" ||
        skip "cannot mount a tmpfs here: $(cat "$w/mount.err")"
    prog "$helpers/rel_faults" grow
    mkdir -p "$w/out.d"
    cp "$prof"/rip-* "$w/out.d/"
    umount "$prof"
    cp "$w/out.d"/rip-* "$prof/"
    grow_case
}

# RLIMIT_FSIZE with SIGXFSZ at its default (kill): the profiler must not be the
# one that raises it.
case_fault_fsize() {
    prog "$helpers/rel_faults" fsize
    grow_case
}

# No fd left at the first allocation.
case_fault_nofile() {
    prog "$helpers/rel_faults" nofile
    eq "exit status" "$rc" 0
    eq "runtime lines" "$(rh_lines)" 1
    yes_ "the line says the profile could not be created" grep -q "cannot create profile" "$w/err"
    eq "profiles written" "$(nrips)" 0
}

# No fd left once the profile is open: the parent records on, and a child
# (which gives back the parent's fd) writes its own profile.
case_fault_nofile_fork() {
    prog "$helpers/rel_faults" nofile-fork
    eq "exit status" "$rc" 0
    eq "runtime warnings" "$(grep '^rheaper: ' "$w/err" | grep -vc ': wrote ' || true)" 0
    eq "profiles written" "$(nrips)" 2
    convert_all
    check_expect
}

# The real allocator returns NULL.
case_fault_null_alloc() {
    prog "$helpers/rel_faults" nullalloc
    eq "exit status" "$rc" 0
    convert_all
    check_expect
}

# EINTR: a periodic signal without SA_RESTART; small chunks so the runtime
# opens many, and module maps written on each dlopen and dlclose.
case_fault_eintr() {
    prog RHEAPER_BUFFER_SIZE=64 "$helpers/rel_faults" eintr "$helpers/rel_lib.so"
    eq "exit status" "$rc" 0
    convert_all
    check_expect
}

# ---- the program's lifecycle -------------------------------------------------

# life MODE [ARG]: the program exits 0, every profile converts, facts hold.
life() {
    prog "$helpers/rel_life" "$@"
    eq "exit status of rel_life $1" "$rc" 0
    convert_all
    check_expect
}
case_life_threads10k() { life threads10k; }
case_life_fork_threads() { life fork-threads; eq "profiles" "$(nrips)" 21; }
case_life_fork100() { life fork100; eq "profiles" "$(nrips)" 101; }
case_life_exec() {
    life exec "$helpers/rel_life"
    # parent, fork child before exec, its exec'd image, the vfork'd and the
    # spawned instrumented images; /bin/true writes nothing
    eq "profiles" "$(nrips)" 5
}
case_life_sigalloc() { life sigalloc; }
case_life_dlclose() { life dlclose "$helpers/rel_lib.so"; }

# exit() from one thread while others allocate, ten times over.
case_life_exit_thread() {
    for i in 1 2 3 4 5 6 7 8 9 10; do
        rm -rf "$prof" && mkdir -p "$prof"
        : > "$RH_EXPECT_FILE"
        life exit-thread
        eq "profiles" "$(nrips)" 1
    done
}
