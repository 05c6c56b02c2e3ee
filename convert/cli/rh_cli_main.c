/* rh_cli_main.c: the `rheaper` command: dispatch, usage, `run` and `convert`.
 *
 *     rheaper COMMAND [OPTIONS] ...
 *
 * Each subcommand is an rh_cmd_*() function (rh_cli.h) that takes its own argv
 * and returns the exit status: 0 success, 1 failure (one line on stderr), 2 a
 * usage error. `run` starts an already-built program with tracking on, converts
 * the profile its process wrote and prints the summary; `convert` is
 * rheaper-convert under another name. The other commands live in
 * rh_cli_cmds.c (listings), rh_export_svg.c (flamegraph, timeline),
 * rh_export_heaptrack.c (export) and rh_export_html.c (report).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rh_cli.h"
#include "rh_convert.h"
#include "rh_core.h"
#include "rh_live.h"
#include "rh_push.h"
#include "rh_safefile.h"

#ifndef RHEAPER_VERSION_STRING
#define RHEAPER_VERSION_STRING "0.0.0"
#endif

static const char rh_usage[] =
    "usage: rheaper COMMAND [OPTIONS]\n"
    "Answers questions about a heap profile (a profile.db from rheaper-convert).\n"
    "\n"
    "  run [-o DB] [--force] -- PROG ARGS...   profile PROG (built with rheaper-cc),\n"
    "                                          convert, print the summary\n"
    "  convert RIP DB [--force] [--quiet] [--min-lifetime T]\n"
    "                                          the same as rheaper-convert\n"
    "  collect --listen ADDR:PORT --dir DIR [--any] [--clickhouse URL]   receive\n"
    "                                          profiles streamed by programs run with\n"
    "                                          RHEAPER_STREAM=HOST:PORT (and push them)\n"
    "  record -p PID|-P NAME [-d DURATION] [-o DB] [--force] [--dir DIR]\n"
    "                                          record a running process started\n"
    "                                          with RHEAPER_ENABLE=signal\n"
    "  live PID|RIP|-P NAME [--once [--json]]  watch a running program's heap\n"
    "                                          (terminal UI; keys in rheaper(1))\n"
    "  view [DB|RIP] [--once [--json]]         a saved profile in the same UI\n"
    "                                          (default: the most recent one)\n"
    "  list [DIR...] [--json]                  the profiles in DIR (default: . and\n"
    "                                          RHEAPER_PROFILE_DIR) and their state\n"
    "  summary DB                              totals, peak, leaks, top sites, threads\n"
    "  top DB [--by bytes|count|leaked|peak|temporary] [-n N] [--stacks]\n"
    "  top heap DB ...                         the same (plain top is the heap's)\n"
    "  top cpu DB [-n N] [--threshold PCT] [--stacks]\n"
    "                                          CPU samples by function and line\n"
    "  leaks DB [-n N] [--buckets N] [--stacks]   never-freed blocks by call site,\n"
    "                                          steady growth first\n"
    "  peak DB [-n N] [--stacks]               call sites holding memory at the peak\n"
    "  churn DB [-n N] [--stacks]              call sites by bytes allocated and freed\n"
    "                                          per second, short-lived blocks\n"
    "  query DB \"SQL\"                          run SQL (the table sel holds the\n"
    "                                          filtered allocations)\n"
    "  flamegraph DB [--leaked|--peak|--all|--cpu] [--folded] -o OUT\n"
    "  timeline DB -o OUT.svg\n"
    "  export heaptrack DB -o FILE\n"
    "  export --pprof OUT.pb.gz DB [--heap|--cpu] [--at peak|end]\n"
    "  report DB -o OUT.html\n"
    "  mmaps DB [--mallopts] [-n N]            the recorded mmap/munmap/mremap (or\n"
    "                                          mallopt) calls, in order\n"
    "  diff A.db B.db [-n N] [--all] [--by leaked|peak|bytes|count] [--noise PCT]\n"
    "                                          call sites that grew, shrank, appeared\n"
    "                                          or vanished from A to B\n"
    "  serve PROFILE... [--listen ADDR:PORT] [--any]   web UI and bytehound's REST\n"
    "                                          API (default 127.0.0.1:8080)\n"
    "  push PROFILE... --clickhouse URL [--label KEY=VALUE]...   send profiles (dbs\n"
    "                                          or rips) to ClickHouse (docs/fleet.md)\n"
    "\n"
    "Output: --json or --csv instead of aligned columns.\n"
    "Filters (every command): --from T, --to T (seconds or N%), --function RE,\n"
    "  --not-function RE, --file RE, --not-file RE (any frame of the stack),\n"
    "  --min-size N, --max-size N, --lifetime leaked|temporary|MIN..MAX\n"
    "  (ns, us, ms, s), --thread ID|TID|NAME, --temporary-ms T,\n"
    "  --kind K, --not-kind K (the allocation function or pool name).\n"
    "Call sites (every command): the first frame past allocator wrappers;\n"
    "  --skip-function RE skips more, --no-skip uses frame 0.\n"
    "  rheaper --help | --version\n"
    "  rheaper COMMAND --help                  that command's lines of this text\n";

/* rh_command_help prints the lines of rh_usage that describe command c: each
 * line whose first word is c, with the continuation lines under it (indented
 * past the synopsis column), so `rheaper top --help` and `rheaper --help`
 * never disagree. Returns 0, or 2 when rh_usage names no such command. */
static int rh_command_help(const char *c)
{
    size_t clen = strlen(c);
    int found = 0, in_block = 0;
    for (const char *line = rh_usage; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (len > 2 + clen && !strncmp(line, "  ", 2) && !strncmp(line + 2, c, clen) &&
            (line[2 + clen] == ' ')) {
            if (!found)
                printf("usage: rheaper %s\n", c);
            in_block = found = 1;
            printf("%.*s\n", (int)len, line);
        } else if (in_block && len > 12 && !strncmp(line, "            ", 12)) {
            printf("%.*s\n", (int)len, line);
        } else {
            in_block = 0;
        }
        line += len + (end != NULL);
    }
    if (!found)
        return 2;
    puts("Filters and output options: rheaper --help. The manual: man rheaper.");
    return 0;
}

/* ---- stand-ins for the second half's commands ----------------------------- */

/* ---- convert ---------------------------------------------------------------- */

int rh_cmd_convert(int argc, char **argv)
{
    int dashdash = 0, n = 0;
    struct rh_convert_opts o = {0};
    const char *paths[2] = {NULL, NULL};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!dashdash && a[0] == '-' && a[1]) {
            if (!strcmp(a, "--force") || !strcmp(a, "-f")) {
                o.force = 1;
            } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
                o.quiet = 1;
            } else if (!strcmp(a, "--parent") && i + 1 < argc) {
                o.parent = argv[++i]; /* a fork child's parent profile (inherited blocks) */
            } else if (!strcmp(a, "--min-lifetime")) {
                if (i + 1 >= argc || rh_parse_lifetime_arg(argv[i + 1], &o.min_lifetime_ns)) {
                    fprintf(stderr, "rheaper: convert: --min-lifetime needs a duration with a unit"
                                    " (e.g. 10ms, 1s)\n");
                    return 2;
                }
                i++;
            } else if (!strcmp(a, "--")) {
                dashdash = 1;
            } else {
                fprintf(stderr, "rheaper: convert: unknown option %s\n", a);
                return 2;
            }
            continue;
        }
        if (n == 2) {
            fprintf(stderr, "rheaper: convert: too many arguments (expected RIP DB)\n");
            return 2;
        }
        paths[n++] = a;
    }
    if (n != 2) {
        fprintf(stderr, "rheaper: convert: expected RIP DB\n");
        return 2;
    }
    return rh_convert_file_opts("rheaper", paths[0], paths[1], &o);
}

/* ---- run ---------------------------------------------------------------------- */

/* The pid in the header of the rip file at path, or -1 when it is not one
 * (rh_rip_header_check refuses its header). */
static long rh_rip_pid(const char *path)
{
    uint8_t b[RIP_HEADER_SIZE];
    struct rip_file_header h;
    /* the run's directory may be shared: a FIFO or a symlink planted at a
     * rip's name must neither block nor redirect the look */
    int fd = rh_safe_open(path, O_RDONLY, 0, RH_SAFE_REGULAR, 0, NULL, 0);
    if (fd < 0)
        return -1;
    ssize_t got = pread(fd, b, sizeof b, 0);
    close(fd);
    size_t n = got > 0 ? (size_t)got : 0;
    if (rh_rip_header_check(b, n, &h, NULL))
        return -1;
    return (long)h.pid;
}

/* The profile the run's process `pid` wrote in dir, whatever its name
 * (RHEAPER_PROFILE_NAME may be any template): the rip file whose header
 * names pid; of several (recordings 1, 2, ... of one process), the first by
 * name. Writes its name into name (size n) and returns 0, or -1 when none. */
static int rh_find_rip(const char *dir, long pid, char *name, size_t n)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int found = -1;
    struct dirent *e;
    char path[4096 + 300];
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (rh_rip_pid(path) != pid)
            continue;
        if (found < 0 || strcmp(e->d_name, name) < 0) {
            snprintf(name, n, "%s", e->d_name);
            found = 0;
        }
    }
    closedir(d);
    return found;
}

/* Lists the rip files in dir other than `mine`, one line each on stderr.
 * Returns how many there were. */
static int rh_other_rips(const char *dir, const char *mine)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char path[4096 + 300];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (e->d_name[0] == '.' || !strcmp(e->d_name, mine) || rh_rip_pid(path) < 0)
            continue;
        fprintf(stderr,
                "rheaper: another process of the run wrote %s/%s (convert it with "
                "`rheaper convert %s/%s DB`)\n",
                dir, e->d_name, dir, e->d_name);
        n++;
    }
    closedir(d);
    return n;
}

int rh_cmd_run(int argc, char **argv)
{
    const char *out = "profile.db";
    int force = 0, i;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        if (a[0] != '-')
            break;
        if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "rheaper: run: %s needs a file name\n", a);
                return 2;
            }
            out = argv[++i];
        } else if (!strncmp(a, "--output=", 9)) {
            out = a + 9;
        } else if (!strcmp(a, "--force") || !strcmp(a, "-f")) {
            force = 1;
        } else {
            fprintf(stderr, "rheaper: run: unknown option %s\n", a);
            return 2;
        }
    }
    if (i >= argc) {
        fprintf(stderr, "rheaper: run: expected -- PROG ARGS...\n");
        return 2;
    }
    char **prog = argv + i;
    struct stat sb;
    if (!force && lstat(out, &sb) == 0) {
        fprintf(stderr, "rheaper: %s exists; use --force to overwrite\n", out);
        return 1;
    }

    const char *tmp = getenv("TMPDIR");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/rheaper-run.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        fprintf(stderr, "rheaper: %s: cannot create a directory (%s)\n", dir, strerror(errno));
        return 1;
    }

    /* Like system(): the program gets ^C, rheaper waits for it and converts. */
    struct sigaction ign = {.sa_handler = SIG_IGN}, old_int, old_quit;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGINT, &ign, &old_int);
    sigaction(SIGQUIT, &ign, &old_quit);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "rheaper: run: cannot fork (%s)\n", strerror(errno));
        rmdir(dir);
        return 1;
    }
    if (pid == 0) {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGQUIT, &old_quit, NULL);
        setenv("RHEAPER_ENABLE", "1", 1);
        setenv("RHEAPER_PROFILE_DIR", dir, 1);
        execvp(prog[0], prog);
        fprintf(stderr, "rheaper: %s: cannot run (%s)\n", prog[0], strerror(errno));
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGQUIT, &old_quit, NULL);

    int code;
    if (WIFEXITED(status)) {
        code = WEXITSTATUS(status);
        fprintf(stderr, "rheaper: %s exited with status %d\n", prog[0], code);
    } else {
        code = 128 + WTERMSIG(status);
        fprintf(stderr, "rheaper: %s was killed by signal %d (%s)\n", prog[0], WTERMSIG(status),
                strsignal(WTERMSIG(status)));
    }

    /* the file the process wrote: named by RHEAPER_PROFILE_NAME when the
     * environment sets a template, so found by the pid in its header */
    char name[1024] = "", rip[4200];
    int found = rh_find_rip(dir, (long)pid, name, sizeof name);
    snprintf(rip, sizeof rip, "%s/%s", dir, name);
    int others = rh_other_rips(dir, name);
    if (found != 0) {
        fprintf(stderr,
                "rheaper: %s wrote no profile (was it built with rheaper-cc, and did it "
                "start?)\n",
                prog[0]);
        if (!others)
            rmdir(dir);
        return 1;
    }
    int rc = rh_convert_file("rheaper", rip, out, force, 0, NULL);
    if (rc == 0)
        unlink(rip);
    if (!others && rc == 0)
        rmdir(dir);
    else if (rc)
        fprintf(stderr, "rheaper: the profile stays in %s\n", rip);
    if (rc)
        return rc;
    fprintf(stderr, "rheaper: wrote %s\n", out);
    char *sargv[] = {"summary", (char *)out, NULL};
    if (rh_cmd_summary(2, sargv) != 0)
        return 1;
    return code;
}

/* ---- dispatch ------------------------------------------------------------------ */

static const struct {
    const char *name;
    int (*fn)(int, char **);
} rh_cmds[] = {
    {"run", rh_cmd_run},       {"convert", rh_cmd_convert},       {"summary", rh_cmd_summary},
    {"top", rh_cmd_top},       {"leaks", rh_cmd_leaks},           {"peak", rh_cmd_peak},
    {"churn", rh_cmd_churn},
    {"query", rh_cmd_query},   {"flamegraph", rh_cmd_flamegraph}, {"timeline", rh_cmd_timeline},
    {"export", rh_cmd_export}, {"report", rh_cmd_report},
    {"record", rh_cmd_record},
    {"collect", rh_cmd_collect},
    {"live", rh_cmd_live},     {"view", rh_cmd_view},             {"list", rh_cmd_list},
    {"mmaps", rh_cmd_mmaps},
    {"diff", rh_cmd_diff},     {"serve", rh_cmd_serve},
    {"push", rh_cmd_push},
};

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(rh_usage, stderr);
        return 2;
    }
    const char *c = argv[1];
    if (!strcmp(c, "--help") || !strcmp(c, "-h") || !strcmp(c, "help")) {
        fputs(rh_usage, stdout);
        return 0;
    }
    if (!strcmp(c, "--version")) {
        printf("rheaper %s (rip format %u)\n", RHEAPER_VERSION_STRING, RIP_VERSION);
        return 0;
    }
    for (size_t k = 0; k < sizeof rh_cmds / sizeof rh_cmds[0]; k++) {
        if (strcmp(c, rh_cmds[k].name))
            continue;
        if (argc == 3 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h")))
            return rh_command_help(c);
        return rh_cmds[k].fn(argc - 1, argv + 1);
    }
    fprintf(stderr, "rheaper: unknown command '%s' (rheaper --help lists them)\n", c);
    return 2;
}
