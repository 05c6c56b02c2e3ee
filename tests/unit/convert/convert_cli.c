/* convert_cli.c: the rheaper-convert command line and its file safety.
 *
 * Usage errors exit 2; --help and --version exit 0. An existing output (file
 * or symlink) is refused without --force and left untouched; --force replaces
 * it. A failed conversion, even with --force, leaves the existing file as it
 * was and no temp file behind; a missing output directory is one error line.
 * Usage: convert_cli RHEAPER-CONVERT
 */
#include "convtest.h"
#include "harness.h"

static const char *conv;
static char dir[256];

static int run(struct ct_run *r, const char *a, const char *b, const char *c, const char *d)
{
    const char *args[] = {a, b, c, d, NULL};
    ct_exec(r, conv, args);
    return WIFEXITED(r->status) ? WEXITSTATUS(r->status) : -1;
}

static int file_is(const char *path, const char *content)
{
    char buf[256] = "";
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    buf[n] = 0;
    return !strcmp(buf, content);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: convert_cli RHEAPER-CONVERT\n");
        return 2;
    }
    conv = argv[1];
    ct_scratch(dir, sizeof dir, "convert_cli");
    struct ct_run r;
    char rip[512], out[512], link_path[512], bad[512], nodir[512];
    snprintf(rip, sizeof rip, "%s/rip-1000", dir);
    snprintf(out, sizeof out, "%s/out.db", dir);
    snprintf(link_path, sizeof link_path, "%s/link.db", dir);
    snprintf(bad, sizeof bad, "%s/bad", dir);
    snprintf(nodir, sizeof nodir, "%s/no/such/dir/out.db", dir);
    struct rw_file f;
    ct_reference(&f, 1);
    CHECK_EQ(rw_save(&f, rip), 0);
    rw_free_file(&f);

    /* usage */
    CHECK_EQ(run(&r, NULL, NULL, NULL, NULL), 2);
    CHECK_EQ(run(&r, rip, NULL, NULL, NULL), 2);
    CHECK_EQ(run(&r, rip, out, "extra", NULL), 2);
    CHECK_EQ(run(&r, "--bogus", rip, out, NULL), 2);
    CHECK(strstr(r.err, "--bogus") != NULL);
    CHECK(!ct_exists(out));
    CHECK_EQ(run(&r, "--help", NULL, NULL, NULL), 0);
    CHECK_EQ(run(&r, "--version", NULL, NULL, NULL), 0);

    /* an existing output is refused before any work and left alone */
    FILE *fp = fopen(out, "w");
    fputs("precious", fp);
    fclose(fp);
    CHECK_EQ(run(&r, rip, out, NULL, NULL), 1);
    CHECK_EQ(r.err_lines, 1);
    CHECK(strstr(r.err, "exists; use --force to overwrite") != NULL);
    CHECK(strstr(r.err, out) != NULL);
    CHECK(file_is(out, "precious"));
    CHECK_EQ(ct_count_prefix(dir, "out.db.tmp"), 0);

    /* the same for a symlink, even a dangling one */
    CHECK_EQ(symlink("nowhere", link_path), 0);
    CHECK_EQ(run(&r, rip, link_path, NULL, NULL), 1);
    CHECK(strstr(r.err, "exists") != NULL);

    /* a failed conversion with --force keeps the old file and no temp file */
    fp = fopen(bad, "w");
    fputs("this is not a profile", fp);
    fclose(fp);
    CHECK_EQ(run(&r, "--force", bad, out, NULL), 1);
    CHECK_EQ(r.err_lines, 1);
    CHECK(strstr(r.err, "not a rip file (bad magic)") != NULL);
    CHECK(file_is(out, "precious"));
    CHECK_EQ(ct_count_prefix(dir, "out.db.tmp"), 0);

    /* --force replaces it with the database */
    CHECK_EQ(run(&r, rip, "--force", out, NULL), 0);
    CHECK_EQ(r.err_lines, 1); /* the symbolizer's line about the missing module file */
    sqlite3 *db = ct_open_db(out);
    CHECK(db != NULL);
    if (db) {
        CHECK_EQ(ct_int(db, "SELECT count(*) FROM allocations"), CT_ROWS);
        CHECK_EQ(ct_int(db, "SELECT value FROM meta WHERE key = 'clean'"), 1);
        sqlite3_close(db);
    }
    CHECK_EQ(ct_count_prefix(dir, "out.db.tmp"), 0);

    /* --quiet: nothing on stderr for a clean profile */
    unlink(out);
    CHECK_EQ(run(&r, "--quiet", rip, out, NULL), 0);
    CHECK_EQ(ct_exists(out), 1);

    /* an output directory that does not exist */
    CHECK_EQ(run(&r, rip, nodir, NULL, NULL), 1);
    CHECK_EQ(r.err_lines, 1);
    CHECK(strstr(r.err, "no/such/dir") != NULL);
    return rh_test_summary();
}
