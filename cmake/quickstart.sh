#!/bin/sh
# quickstart.sh: the README's two commands, run from the repository root.
#
#   sh cmake/quickstart.sh demo   builds rheaper, profiles tests/example/example.c
#                                 end to end and prints its top allocation sites
#   sh cmake/quickstart.sh test   builds rheaper and runs the whole test suite
#
# Both first check the Debian packages they need. As root they install the
# missing ones; otherwise they print the exact apt-get line and stop. `test` ends
# with ctest's own summary line and exits with ctest's status.
set -eu

# What a plain build needs, each for a part it cannot build without: cmake,
# make, gcc and g++ (the wrappers cover C and C++); python3 (generated
# sources); pkg-config; libdw-dev and libelf-dev (the symbolizer);
# libsqlite3-dev; libncurses-dev (view, live); libprotobuf-c-dev and
# protobuf-c-compiler (pprof export); zlib1g-dev (gzip); libmicrohttpd-dev and
# libjs-chart.js (serve and its UI); libcurl4-openssl-dev (push); libpcre2-dev
# (the regular expressions of filters, with bounded matching). The demo adds
# the sqlite3 shell, which prints its result. .ci/fresh-demo installs nothing
# else on a fresh Debian 12 root, so a package missing here fails CI. pandoc
# (the man pages) is optional for a build and one of the test packages.
BUILD_PKGS="cmake make gcc g++ python3 pkg-config libdw-dev libelf-dev libsqlite3-dev libncurses-dev libprotobuf-c-dev protobuf-c-compiler zlib1g-dev libmicrohttpd-dev libjs-chart.js libcurl4-openssl-dev libpcre2-dev"
DEMO_PKGS="sqlite3"
TEST_PKGS="clang libevent-dev lld binutils valgrind heaptrack libclang-rt-14-dev sqlite3 libxml2-utils librsvg2-bin libjemalloc-dev zlib1g-dev libxml2-dev time tmux golang-go curl jq chromium apache2-utils patch clickhouse-server clickhouse-client man-db groff-base qemu-user musl-tools gcc-aarch64-linux-gnu libc6-dev-arm64-cross gcc-i686-linux-gnu libc6-dev-i386-cross libc6-i386 g++-i686-linux-gnu gcc-arm-linux-gnueabihf libc6-dev-armhf-cross gcc-mips64el-linux-gnuabi64 libc6-dev-mips64el-cross musl-dev:arm64 nodejs libgoogle-perftools-dev libmimalloc-dev pandoc bzip2"
# Wanted by the test mode but optional to install: without it the Chromium
# tests fail under CI=true and skip elsewhere (tests/lib/require.sh).
OPTIONAL_TEST_PKGS="chromium"

say() { printf 'quickstart: %s\n' "$*"; }
die() { printf 'quickstart: error: %s\n' "$*" >&2; exit 1; }

usage() {
    echo "usage: sh cmake/quickstart.sh demo|test" >&2
    echo "  demo  build rheaper, profile the bundled example, print its top allocation sites" >&2
    echo "  test  build rheaper and run the whole test suite (ctest)" >&2
    exit 2
}

# ensure_foreign_archs PKG...: as root, lets dpkg install the packages of the
# list that name another architecture (PKG:ARCH, e.g. AArch64 musl for the cross
# tests); otherwise ensure_packages names them.
ensure_foreign_archs() {
    command -v dpkg >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ] || return 0
    for pkg in "$@"; do
        case "$pkg" in
        *:*)
            arch=${pkg#*:}
            dpkg --print-foreign-architectures | grep -qx "$arch" ||
                dpkg --add-architecture "$arch" || die "dpkg --add-architecture $arch failed"
            ;;
        esac
    done
}

# ensure_packages PKG...: installs (as root) or names (otherwise) every package
# of the list that dpkg does not report as installed.
ensure_packages() {
    if ! command -v dpkg-query >/dev/null 2>&1; then
        say "not a Debian system: cannot check packages; make sure these are installed: $*"
        return 0
    fi
    missing=""
    for pkg in "$@"; do
        status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
        case "$status" in
        *"ok installed") ;;
        *) case " $missing " in *" $pkg "*) ;; *) missing="$missing $pkg" ;; esac ;;
        esac
    done
    [ -z "$missing" ] && return 0
    if [ "$(id -u)" -eq 0 ]; then
        say "installing missing packages:$missing"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq || die "apt-get update failed"
        # shellcheck disable=SC2086 # word splitting of the package list is wanted
        apt-get install -y -qq $missing || die "apt-get could not install:$missing"
    else
        say "missing Debian packages:$missing" >&2
        echo "Install them with:" >&2
        echo "  sudo apt-get install -y$missing" >&2
        exit 1
    fi
}

# build_rheaper: configures and builds everything into build/.
build_rheaper() {
    say "building rheaper into build/"
    cmake -S . -B build || die "cmake configuration failed (see the messages above)"
    cmake --build build -j2 || die "the build failed (see the messages above)"
}

# run_demo: profiles the example program in build/demo and shows the result.
run_demo() {
    for tool in build/bin/rheaper-cc build/bin/rheaper-convert; do
        [ -x "$tool" ] || die "$tool was not built"
    done
    demo=build/demo
    mkdir -p "$demo"
    rm -f "$demo"/rip-* "$demo"/example

    say "compiling tests/example/example.c with build/bin/rheaper-cc"
    build/bin/rheaper-cc -O2 -pthread -o "$demo/example" tests/example/example.c ||
        die "rheaper-cc could not build the example"

    say "running it with RHEAPER_ENABLE=1 in $demo/"
    (cd "$demo" && RHEAPER_ENABLE=1 ./example) || die "the example program failed"
    set -- "$demo"/rip-*
    [ -f "$1" ] || die "the example wrote no profile (no $demo/rip-* file)"
    [ $# -eq 1 ] || die "expected one profile in $demo, found: $*"
    rip=$(basename "$1")

    say "converting: build/bin/rheaper-convert $rip profile.db --force"
    (cd "$demo" && ../bin/rheaper-convert "$rip" profile.db --force) ||
        die "rheaper-convert failed on $demo/$rip"

    echo
    say "top allocation sites by bytes (the callsites view of $demo/profile.db):"
    sqlite3 -header -column "$demo/profile.db" "
        SELECT sym AS function, replace(file, rtrim(file, replace(file, '/', '')), '') AS file,
               line, count, total_size AS bytes, leaked_count AS leaked, leaked_bytes
        FROM callsites ORDER BY total_size DESC LIMIT 10;" ||
        die "the query on $demo/profile.db failed"
    echo
    sqlite3 "$demo/profile.db" "
        SELECT 'allocations: ' || count(*) || ', bytes: ' || sum(size) ||
               ', leaked: ' || sum(dealloc_after IS NULL) FROM allocations;"
    echo
    echo "Explore further, for example: SELECT * FROM leaks; SELECT * FROM backtraces WHERE id = 1;"
    echo "  sqlite3 $demo/profile.db"
}

[ $# -eq 1 ] || usage
cd "$(dirname "$0")/.." || die "cannot enter the repository root"
if [ ! -f CMakeLists.txt ] || [ ! -d runtime ]; then
    die "run this from a rheaper checkout"
fi

# shellcheck disable=SC2086 # the package lists are split into words on purpose
case "$1" in
demo)
    ensure_packages $BUILD_PKGS $DEMO_PKGS
    build_rheaper
    run_demo
    ;;
test)
    ensure_foreign_archs $TEST_PKGS
    ensure_packages $BUILD_PKGS $TEST_PKGS
    # shellcheck disable=SC2086
    (ensure_packages $OPTIONAL_TEST_PKGS) ||
        say "optional packages not installed ($OPTIONAL_TEST_PKGS): the tests needing them skip"
    say "building rheaper and its tests into build/"
    cmake -S . -B build -DRHEAPER_BUILD_TESTS=ON || die "cmake configuration failed"
    cmake --build build -j2 || die "the build failed (see the messages above)"
    say "running the test suite"
    # exec: ctest's summary is the last line and its status is ours.
    exec ctest --test-dir build --output-on-failure -j2
    ;;
*) usage ;;
esac
