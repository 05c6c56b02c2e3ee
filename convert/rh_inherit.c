/* rh_inherit.c: the blocks a fork child starts with, from its parent's
 * profile (FORMAT.md "Servers"; docs/servers.md "Prefork
 * workers").
 *
 * A prefork server's workers start with the master's heap: the configuration
 * parsed before the fork. Without it, a worker's frees of those blocks are
 * frees of unknown addresses, and a block it inherited and leaked is in no
 * profile of its own. The runtime writes, into a fork child's first profile,
 * the parent's pid, the parent's profile path and the fork's
 * CLOCK_MONOTONIC time (header flag RIP_HDR_F_ORIGIN). Here the converter:
 *
 *   1. finds the parent's profile: the --parent option, else the path the
 *      runtime wrote, else a file of that name next to the child's profile;
 *      it must be the profile of that pid, started before the fork;
 *   2. computes the parent's live blocks at the fork: one merge of the
 *      parent's profile (rh_merge_run) whose rows are kept when they were
 *      allocated before the fork and not freed before it. A parent that is
 *      itself a fork child (nginx's master is the daemonising fork of the
 *      process that was started) gets its own inherited blocks first, up to
 *      RH_INHERIT_DEPTH generations;
 *   3. imports them into the child (rh_inherit_apply): one stack per distinct
 *      parent stack, with the parent's frames and kind (a fork child has the
 *      same address space, so the child's modules symbolize them), ids from
 *      RH_INHERIT_STACK_BASE up; the merge then starts with them live at time
 *      0, in the thread "inherited", as rows 1..N.
 *
 * Marking costs nothing per row: inherited rows are the first N row ids
 * (meta inherited_rows) and their stacks have ids of RH_INHERIT_STACK_BASE and
 * up. Cost: one pass over the parent's profile (and its ancestors') per child
 * converted, memory for the parent's live blocks.
 *
 * Without the parent's profile the caller prints one line and converts as
 * before.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rh_core.h"
#include "rh_schema.h"
#include "rh_util.h"

#define RH_INHERIT_DEPTH 8

struct rh_inh_ctx {
    struct rh_rip *r;
    int64_t at;              /* the fork in ns since the parent's start */
    struct rh_inherit *out;
    int oom;
};

/* Keeps a row of the parent that is live at the fork. */
static int rh_inh_row(void *ctx, const struct rh_row *row)
{
    struct rh_inh_ctx *c = ctx;
    if (row->alloc_ns > c->at || (row->dealloc_ns >= 0 && row->dealloc_ns <= c->at))
        return 0;
    struct rh_inherit *o = c->out;
    const struct rh_stack *st = &c->r->stacks[row->stack_index];
    uint32_t nf = st->defined ? st->nframes : 0;
    if (rh_grow(&o->blocks, &o->capblocks, o->nblocks + 1, sizeof *o->blocks) ||
        rh_grow(&o->frames, &o->capframes, o->nframes + nf, sizeof *o->frames)) {
        c->oom = 1;
        return -1;
    }
    struct rh_inh_block *b = &o->blocks[o->nblocks++];
    b->addr = row->raw_addr ? row->raw_addr : row->addr; /* a pool block keeps its tag */
    b->size = row->size;
    b->kind = st->defined ? st->kind : 0;
    b->cut = st->cut;
    b->key = st->id;
    b->nframes = nf;
    b->frames = o->nframes;
    if (nf)
        memcpy(o->frames + o->nframes, c->r->frames + st->frames, nf * sizeof *o->frames);
    o->nframes += nf;
    o->bytes += row->size;
    return 0;
}

/* The parent's profile of child r: opt, else the recorded path, else its
 * file name next to child_path. Returns 0 with path filled, or -1. */
static int rh_inh_find(const struct rh_rip *r, const char *child_path, const char *opt,
                       char *path, size_t size)
{
    if (opt) {
        snprintf(path, size, "%s", opt);
        return access(path, R_OK) == 0 ? 0 : -1;
    }
    if (!r->origin_path[0])
        return -1;
    snprintf(path, size, "%s", r->origin_path);
    if (access(path, R_OK) == 0)
        return 0;
    const char *base = strrchr(r->origin_path, '/');
    base = base ? base + 1 : r->origin_path;
    const char *slash = strrchr(child_path, '/');
    if (slash)
        snprintf(path, size, "%.*s/%s", (int)(slash - child_path), child_path, base);
    else
        snprintf(path, size, "%s", base);
    return access(path, R_OK) == 0 ? 0 : -1;
}

/* Fills out with the blocks of profile `path` (of process pid) live at
 * CLOCK_MONOTONIC time fork_mono. Returns 0, or -1 with msg set. */
static int rh_inh_live_at(const char *path, uint32_t pid, uint64_t fork_mono, int depth,
                          struct rh_inherit *out, char *msg, size_t msglen)
{
    struct rh_rip *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(msg, msglen, "out of memory");
        return -1;
    }
    int rc = -1;
    struct rh_inherit up = {0};
    if (rh_rip_open_file(r, path, NULL) != 0) {
        snprintf(msg, msglen, "%s", r->err);
        goto out;
    }
    if (r->hdr.pid != pid) {
        snprintf(msg, msglen, "%s is the profile of process %u, not of the parent %u", path,
                 r->hdr.pid, pid);
        goto out;
    }
    if (r->hdr.start_mono_ns > fork_mono) {
        snprintf(msg, msglen, "%s started after the fork (a later recording of process %u)",
                 path, pid);
        goto out;
    }
    /* its own inheritance first (the master of a daemon is a fork child) */
    if (r->has_origin && depth < RH_INHERIT_DEPTH) {
        char gp[PATH_MAX], m2[512];
        if (rh_inh_find(r, path, NULL, gp, sizeof gp) == 0 &&
            rh_inh_live_at(gp, r->origin_ppid, r->origin_mono_ns, depth + 1, &up, m2,
                           sizeof m2) == 0) {
            if (rh_inherit_apply(r, &up) != 0) {
                snprintf(msg, msglen, "out of memory");
                goto out;
            }
            out->profiles += up.profiles;
        }
    }
    struct rh_inh_ctx c = {r, (int64_t)(fork_mono - r->hdr.start_mono_ns), out, 0};
    struct rh_merge_sink sink = {0};
    sink.row = rh_inh_row;
    sink.ctx = &c;
    struct rh_merge_stats st;
    if (rh_merge_run(r, &sink, &st) != 0) {
        snprintf(msg, msglen, c.oom || r->oom ? "out of memory" : "%s cannot be read", path);
        goto out;
    }
    out->profiles++;
    rc = 0;
out:
    rh_inherit_free(&up);
    rh_rip_close(r);
    free(r);
    return rc;
}

int rh_inherit_load(const struct rh_rip *r, const char *child_path, const char *opt,
                    struct rh_inherit *out, char *msg, size_t msglen)
{
    memset(out, 0, sizeof *out);
    if (!r->has_origin)
        return 1;
    out->ppid = r->origin_ppid;
    out->fork_ns = (int64_t)r->origin_mono_ns - (int64_t)r->hdr.start_mono_ns;
    if (rh_inh_find(r, child_path, opt, out->path, sizeof out->path) != 0) {
        snprintf(msg, msglen,
                 "the parent's profile %s (process %u) is not here%s; converted without the "
                 "blocks inherited at the fork (give it with --parent RIP)",
                 opt ? opt : r->origin_path[0] ? r->origin_path : "(unnamed)", r->origin_ppid,
                 opt ? "" : " nor next to this one");
        return -1;
    }
    char why[768];
    if (rh_inh_live_at(out->path, r->origin_ppid, r->origin_mono_ns, 0, out, why, sizeof why)) {
        snprintf(msg, msglen,
                 "the parent's profile cannot give the blocks inherited at the fork: %s; "
                 "converted without them",
                 why);
        rh_inherit_free(out);
        return -1;
    }
    return 0;
}

int rh_inherit_apply(struct rh_rip *r, struct rh_inherit *inh)
{
    if (!inh->nblocks)
        return 0;
    inh->si = calloc(inh->nblocks, sizeof *inh->si);
    if (!inh->si)
        return -1;
    inh->thread = r->has_origin ? rh_rip_thread(r, r->origin_ppid) : rh_rip_thread(r, 0);
    if (!inh->thread)
        return -1;
    struct rh_thread *t = &r->threads[inh->thread - 1];
    snprintf(t->name, sizeof t->name, "inherited");
    t->named = 1;
    /* one stack per distinct parent stack (key), ids from the base up */
    struct rh_map seen = {0};
    uint64_t next = RH_INHERIT_STACK_BASE;
    for (size_t i = 0; i < inh->nblocks; i++) {
        const struct rh_inh_block *b = &inh->blocks[i];
        uint32_t k = rh_map_get(&seen, b->key);
        if (k != UINT32_MAX) {
            inh->si[i] = k;
            continue;
        }
        uint32_t si = rh_rip_stack(r, next++);
        if (si == UINT32_MAX ||
            rh_grow(&r->frames, &r->capframes, r->nframes + b->nframes, sizeof *r->frames) ||
            rh_map_put(&seen, b->key, si)) {
            rh_map_free(&seen);
            return -1;
        }
        struct rh_stack *st = &r->stacks[si];
        if (b->nframes)
            memcpy(r->frames + r->nframes, inh->frames + b->frames,
                   b->nframes * sizeof *r->frames);
        st->frames = r->nframes;
        st->nframes = b->nframes;
        st->kind = b->kind;
        st->cut = b->cut;
        st->defined = 1;
        r->nframes += b->nframes;
        inh->si[i] = si;
    }
    rh_map_free(&seen);
    r->inherit = inh;
    return 0;
}

void rh_inherit_free(struct rh_inherit *inh)
{
    free(inh->blocks);
    free(inh->frames);
    free(inh->si);
    memset(inh, 0, sizeof *inh);
}
