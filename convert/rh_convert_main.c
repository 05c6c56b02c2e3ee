/* rh_convert_main.c: the rheaper-convert command line.
 *
 *     rheaper-convert [--force] [--quiet] RIP DB
 *
 * Reads the rip file RIP (rh_rip.c, rh_stream_decode.c), merges and pairs its events
 * (rh_merge.c), symbolizes the stacks (rh_symbolize.c) and writes the SQLite
 * database DB (rh_db.c); rh_convert_file.c does the work, shared with the
 * rheaper command. Errors are one line, "rheaper-convert: PATH: what";
 * the exit status is 0 on success (a profile cut short included, with one line
 * saying so), 1 on failure and 2 on a usage error. Progress goes to stderr only
 * when stderr is a terminal.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include "rh_convert.h"
#include "rip_format.h"

#ifndef RHEAPER_VERSION_STRING
#define RHEAPER_VERSION_STRING "0.0.0"
#endif

static const char rh_usage[] =
    "usage: rheaper-convert [--force] [--quiet] [--search DIR]... [--debug-dir DIR]... "
    "[--min-lifetime T] [--parent RIP] RIP DB\n"
    "Converts the rheaper profile RIP (rip-<pid>) into the SQLite database DB.\n"
    "  --force    overwrite DB if it exists\n"
    "  --quiet    no warnings or progress, errors only\n"
    "  --search DIR  look for the program and its libraries in DIR (by file name;\n"
    "             build ids must match) when neither their recorded paths nor\n"
    "             their build ids find them, e.g. to convert on another machine\n"
    "  --debug-dir DIR  look for files by build id under DIR/.build-id before\n"
    "             /usr/lib/debug/.build-id (the modules and their debug files)\n"
    "  --min-lifetime T  write rows only for blocks that lived at least T (ns, us,\n"
    "             ms, s, e.g. 10ms) or were never freed; aggregates still count\n"
    "             every event\n"
    "  --parent RIP  the parent's profile of a fork child (found next to RIP\n"
    "             otherwise): its blocks live at the fork are imported as rows\n"
    "             1..meta inherited_rows\n"
    "  --help     this text\n"
    "  --version  print the version\n";

int main(int argc, char **argv)
{
    int force = 0, quiet = 0, dashdash = 0, nsearch = 0, ndebug = 0;
    int64_t min_life = 0;
    const char *parent = NULL;
    const char *search[17] = {0};
    const char *debug_dirs[17] = {0};
    const char *paths[2];
    int npaths = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!dashdash && a[0] == '-' && a[1]) {
            if (!strcmp(a, "--force") || !strcmp(a, "-f")) {
                force = 1;
            } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
                quiet = 1;
            } else if (!strcmp(a, "--search")) {
                if (i + 1 >= argc || nsearch == 16) {
                    fprintf(stderr, "rheaper-convert: --search needs a directory (at most 16)\n");
                    return 2;
                }
                search[nsearch++] = argv[++i];
            } else if (!strcmp(a, "--debug-dir")) {
                if (i + 1 >= argc || ndebug == 16) {
                    fprintf(stderr,
                            "rheaper-convert: --debug-dir needs a directory (at most 16)\n");
                    return 2;
                }
                debug_dirs[ndebug++] = argv[++i];
            } else if (!strcmp(a, "--min-lifetime")) {
                if (i + 1 >= argc || rh_parse_lifetime_arg(argv[i + 1], &min_life)) {
                    fprintf(stderr, "rheaper-convert: --min-lifetime needs a duration with a "
                                    "unit (ns, us, ms, s), e.g. 10ms\n");
                    return 2;
                }
                i++;
            } else if (!strcmp(a, "--parent")) {
                if (i + 1 >= argc) {
                    fprintf(stderr, "rheaper-convert: --parent needs the parent's profile\n");
                    return 2;
                }
                parent = argv[++i];
            } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
                fputs(rh_usage, stdout);
                return 0;
            } else if (!strcmp(a, "--version")) {
                printf("rheaper-convert %s (rip format %u)\n", RHEAPER_VERSION_STRING, RIP_VERSION);
                return 0;
            } else if (!strcmp(a, "--")) {
                dashdash = 1;
            } else {
                fprintf(stderr, "rheaper-convert: unknown option %s\n%s", a, rh_usage);
                return 2;
            }
            continue;
        }
        if (npaths == 2) {
            fprintf(stderr, "rheaper-convert: too many arguments\n%s", rh_usage);
            return 2;
        }
        paths[npaths++] = a;
    }
    if (npaths != 2) {
        fprintf(stderr, "rheaper-convert: expected RIP and DB\n%s", rh_usage);
        return 2;
    }
    struct rh_convert_opts o = {force, quiet, search, debug_dirs, min_life, parent};
    return rh_convert_file_opts("rheaper-convert", paths[0], paths[1], &o);
}
