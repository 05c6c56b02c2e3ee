/* test_symbolize_bad.c: the symbolizer on files it cannot trust.
 *
 * The program resolves its own return addresses against module maps that point
 * at the wrong things: a missing path, its own file under a different build id,
 * truncated copies of itself, random bytes, an ELF header followed by garbage, a
 * directory, an empty file, and copies of itself with bytes flipped all over. In
 * every case it must not crash, must keep module + module-relative address, and
 * where the file is unusable must leave file/line/sym empty and say so in one
 * stderr line per module. It also checks overlapping snapshots (the module
 * registered first wins) and an address in no module.
 */
#define _GNU_SOURCE
#include "../../harness.h"
#include "sym_modules.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rh_symbolize.h"

static volatile int sink;
static uint64_t own[4];
static char tmpdir[256];

__attribute__((noinline)) static void take(int i)
{
    own[i] = (uint64_t)(uintptr_t)__builtin_return_address(0);
    sink++;
}

__attribute__((noinline)) static void site_a(void)
{
    take(0);
    sink++;
}

__attribute__((noinline)) static void site_b(void)
{
    take(1);
    sink++;
    take(2);
    sink++;
}

static struct rh_module as_module(const struct symt_mod *m, const char *path)
{
    struct rh_module r = {m->base, path, m->build_id_len ? m->build_id : NULL, m->build_id_len,
                          m->ranges, m->nranges};
    return r;
}

/* Runs fn with stderr sent to a file; returns what was written (malloc'd). */
static char *capture_stderr(void (*fn)(void *), void *arg)
{
    char path[300];
    snprintf(path, sizeof path, "%s/stderr", tmpdir);
    fflush(stderr);
    int saved = dup(2);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    fn(arg);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    off_t len = lseek(fd, 0, SEEK_END);
    char *buf = calloc(1, (size_t)len + 1);
    if (pread(fd, buf, (size_t)len, 0) < 0)
        buf[0] = 0;
    close(fd);
    return buf;
}

static int count_lines(const char *s, const char *needle)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

struct case_arg {
    struct rh_module mod;
    int expect_unresolved;
    int ok;
};

/* Resolves the three own addresses against one module; every frame must keep
 * the module and relative address; unusable files must give no names. */
static void run_case(void *p)
{
    struct case_arg *c = p;
    struct rh_symbolizer *s = rh_sym_new();
    c->ok = s && rh_sym_add_module(s, &c->mod) == 0;
    for (int k = 0; k < 2; k++) { /* twice: the second round comes from the cache */
        for (int i = 0; i < 3 && c->ok; i++) {
            struct rh_sym_frame f[64];
            int n = rh_sym_resolve(s, own[i], f, 64);
            if (n < 1 || n > 64 || !f[0].module || strcmp(f[0].module, c->mod.path) != 0 ||
                f[0].rel_addr != own[i] - c->mod.base)
                c->ok = 0;
            if (c->expect_unresolved && (n != 1 || f[0].file || f[0].sym || f[0].line))
                c->ok = 0;
        }
    }
    rh_sym_free(s);
}

static int write_file(const char *path, const void *data, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return -1;
    ssize_t w = n ? write(fd, data, n) : 0;
    close(fd);
    return w == (ssize_t)n ? 0 : -1;
}

static unsigned char *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)len);
    if (b && fread(b, 1, (size_t)len, f) != (size_t)len) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *n = (size_t)len;
    return b;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* One unusable module: checks unresolved frames and exactly one warning line
 * containing `why`. */
static void expect_unusable(const struct symt_mod *self, const char *path, int with_bid,
                            const char *why)
{
    struct case_arg c = {as_module(self, path), 1, 0};
    if (!with_bid) {
        c.mod.build_id = NULL;
        c.mod.build_id_len = 0;
    }
    char *err = capture_stderr(run_case, &c);
    CHECK(c.ok);
    CHECK_EQ(count_lines(err, "rheaper-convert: warning: "), 1);
    CHECK(strstr(err, path) != NULL);
    CHECK(why == NULL || strstr(err, why) != NULL);
    if (!c.ok || count_lines(err, "rheaper-convert: warning: ") != 1)
        fprintf(stderr, "  case %s: stderr was: %s", path, err);
    free(err);
}

int main(void)
{
    site_a();
    site_b();
    snprintf(tmpdir, sizeof tmpdir, "/tmp/rh-symbad-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    struct symt_list l;
    symt_collect(&l);
    CHECK(l.n >= 1);
    const struct symt_mod *self = &l.mods[0];
    CHECK(self->build_id_len > 0);

    /* baseline: the right file resolves */
    struct rh_symbolizer *s = rh_sym_new();
    struct rh_module good = as_module(self, self->path);
    CHECK_EQ(rh_sym_add_module(s, &good), 0);
    struct rh_sym_frame f[64];
    CHECK_EQ(rh_sym_resolve(s, own[0], f, 64), 1);
    CHECK(f[0].sym && strcmp(f[0].sym, "site_a") == 0);
    CHECK(f[0].file && strstr(f[0].file, "test_symbolize_bad.c"));
    CHECK(f[0].line > 0);

    /* overlapping snapshots: the module registered first owns the overlap (the
     * converter registers the latest snapshot first); re-registering changes
     * nothing */
    char gone[300];
    snprintf(gone, sizeof gone, "%s/gone.so", tmpdir);
    struct rh_module other = as_module(self, gone);
    other.build_id = NULL;
    other.build_id_len = 0;
    CHECK_EQ(rh_sym_add_module(s, &other), 0);
    CHECK_EQ(rh_sym_resolve(s, own[1], f, 64), 1);
    CHECK(f[0].module && strcmp(f[0].module, self->path) == 0);
    CHECK(f[0].sym && strcmp(f[0].sym, "site_b") == 0);
    CHECK_EQ(rh_sym_add_module(s, &good), 0);
    CHECK_EQ(rh_sym_resolve(s, own[1], f, 64), 1);
    CHECK(f[0].module && strcmp(f[0].module, self->path) == 0);
    struct rh_symbolizer *s2 = rh_sym_new();
    CHECK_EQ(rh_sym_add_module(s2, &other), 0);
    CHECK_EQ(rh_sym_add_module(s2, &good), 0);
    fflush(stderr);
    CHECK_EQ(rh_sym_resolve(s2, own[1], f, 64), 1);
    CHECK(f[0].module && strcmp(f[0].module, gone) == 0 && f[0].sym == NULL);
    CHECK_EQ(f[0].rel_addr, own[1] - self->base);
    rh_sym_free(s2);
    /* a module covering only part of another's range takes just that part */
    uint64_t part[2] = {own[2], own[2] + 1};
    struct rh_module piece = {self->base, gone, NULL, 0, part, 1};
    s2 = rh_sym_new();
    CHECK_EQ(rh_sym_add_module(s2, &piece), 0);
    CHECK_EQ(rh_sym_add_module(s2, &good), 0);
    CHECK_EQ(rh_sym_resolve(s2, own[2], f, 64), 1);
    CHECK(f[0].module && strcmp(f[0].module, gone) == 0);
    CHECK_EQ(rh_sym_resolve(s2, own[1], f, 64), 1);
    CHECK(f[0].module && strcmp(f[0].module, self->path) == 0);
    CHECK(f[0].sym && strcmp(f[0].sym, "site_b") == 0);
    rh_sym_free(s2);

    /* addresses in no module keep the raw address */
    CHECK_EQ(rh_sym_resolve(s, 0, f, 64), 1);
    CHECK(f[0].module == NULL && f[0].rel_addr == 0);
    CHECK_EQ(rh_sym_resolve(s, UINT64_MAX, f, 64), 1);
    CHECK(f[0].module == NULL && f[0].rel_addr == UINT64_MAX && f[0].sym == NULL);
    rh_sym_free(s);

    /* hostile module records: reversed and empty ranges, no path */
    s = rh_sym_new();
    uint64_t bad_ranges[4] = {own[0] + 100, own[0] - 100, own[0], own[0]};
    struct rh_module hostile = {0, NULL, NULL, 0, bad_ranges, 2};
    CHECK_EQ(rh_sym_add_module(s, &hostile), 0);
    CHECK_EQ(rh_sym_resolve(s, own[0], f, 64), 1);
    CHECK(f[0].module == NULL && f[0].rel_addr == own[0]);
    rh_sym_free(s);

    char path[400];
    /* a missing file */
    snprintf(path, sizeof path, "%s/missing/prog", tmpdir);
    expect_unusable(self, path, 1, "No such file or directory");

    /* the right file but another build id */
    {
        struct symt_mod alt = *self;
        alt.build_id[0] ^= 0xff;
        expect_unusable(&alt, self->path, 1,
                        "build id differs from the profiled program; its frames are left "
                        "unresolved");
    }

    /* a directory, an empty file, random bytes, an ELF header with garbage */
    expect_unusable(self, tmpdir, 1, "not a regular file");
    snprintf(path, sizeof path, "%s/empty", tmpdir);
    CHECK_EQ(write_file(path, "", 0), 0);
    expect_unusable(self, path, 1, NULL);
    size_t size;
    unsigned char *image = read_file(self->path, &size);
    CHECK(image != NULL && size > 8192);
    if (!image)
        return rh_test_summary();
    unsigned char *buf = malloc(size);
    for (size_t i = 0; i < size; i++)
        buf[i] = (unsigned char)next_rand();
    snprintf(path, sizeof path, "%s/random", tmpdir);
    CHECK_EQ(write_file(path, buf, 65536), 0);
    expect_unusable(self, path, 1, NULL);
    memcpy(buf, image, 64); /* a valid ELF header, section/program headers garbage */
    snprintf(path, sizeof path, "%s/elfhead", tmpdir);
    CHECK_EQ(write_file(path, buf, size), 0);
    expect_unusable(self, path, 0, NULL);

    /* truncated copies: small cuts lose the program headers or everything */
    static const size_t cuts[] = {1, 4, 16, 52, 64, 100, 500, 4096};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        snprintf(path, sizeof path, "%s/trunc%zu", tmpdir, cuts[i]);
        CHECK_EQ(write_file(path, image, cuts[i]), 0);
        expect_unusable(self, path, 0, NULL);
    }
    /* larger cuts may still resolve partly; they must not crash and must keep
     * module + relative address */
    static const unsigned fractions[] = {10, 30, 50, 70, 90, 99};
    for (size_t i = 0; i < sizeof fractions / sizeof fractions[0]; i++) {
        snprintf(path, sizeof path, "%s/cut%u", tmpdir, fractions[i]);
        CHECK_EQ(write_file(path, image, size * fractions[i] / 100), 0);
        struct case_arg c = {as_module(self, path), 0, 0};
        c.mod.build_id = NULL;
        c.mod.build_id_len = 0;
        free(capture_stderr(run_case, &c));
        CHECK(c.ok);
    }

    /* bit flips all over the file, 60 variants */
    int flipped_ok = 0;
    for (int v = 0; v < 60; v++) {
        memcpy(buf, image, size);
        for (int k = 0; k < 64; k++) {
            size_t at = (size_t)(next_rand() % size);
            buf[at] ^= (unsigned char)(1u << (next_rand() % 8));
        }
        snprintf(path, sizeof path, "%s/flip%d", tmpdir, v);
        CHECK_EQ(write_file(path, buf, size), 0);
        struct case_arg c = {as_module(self, path), 0, 0};
        c.mod.build_id = NULL;
        c.mod.build_id_len = 0;
        free(capture_stderr(run_case, &c));
        flipped_ok += c.ok;
        unlink(path);
    }
    CHECK_EQ(flipped_ok, 60);

    free(buf);
    free(image);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    CHECK_EQ(system(cmd), 0);
    return rh_test_summary();
}
