/* rt_test.h: helpers for the runtime's unit tests: a strict rip reader, fake
 * shims and temporary directories.
 *
 * The tests drive the runtime directly through rh_hooks.h (as the wrap shims
 * will) with addresses and sizes they choose, then read the rip file back with
 * the reader below and compare record by record. The reader is written
 * independently of the converter from FORMAT.md, and is strict: any damage is a
 * test failure (tr_file.err), not something to recover from.
 */
#ifndef RT_TEST_H
#define RT_TEST_H

#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "rh_hooks.h"
#include "rheaper.h"
#include "rip_format.h"

/* ---- fake shims ------------------------------------------------------------
 * Each behaves like a wrap shim and returns fp[1], the frame 0 it recorded. */

__attribute__((noinline, unused)) static void *tr_alloc(unsigned kind, uintptr_t p, size_t size)
{
    if (rh_hook_begin()) {
        rh_record_alloc(kind, (void *)p, size, rh_now(), __builtin_frame_address(0));
        rh_hook_end();
    }
    __asm__ __volatile__("");
    return __builtin_return_address(0);
}

__attribute__((noinline, unused)) static void tr_free(uintptr_t p)
{
    if (rh_hook_begin()) {
        rh_record_free((void *)p, rh_now());
        rh_hook_end();
    }
    __asm__ __volatile__("");
}

__attribute__((noinline, unused)) static void *tr_realloc(unsigned kind, uintptr_t old, uintptr_t p,
                                                          size_t size)
{
    if (rh_hook_begin()) {
        uint64_t t1 = rh_now();
        rh_record_realloc(kind, (void *)old, (void *)p, size, t1, rh_now(),
                          __builtin_frame_address(0));
        rh_hook_end();
    }
    __asm__ __volatile__("");
    return __builtin_return_address(0);
}

__attribute__((noinline, unused)) static void *tr_fail(unsigned kind, size_t size)
{
    if (rh_hook_begin()) {
        rh_record_fail(kind, size, __builtin_frame_address(0));
        rh_hook_end();
    }
    __asm__ __volatile__("");
    return __builtin_return_address(0);
}

/* ---- the reader ---------------------------------------------------------- */

struct tr_event {
    int op;             /* RIP_OP_ALLOC, FREE, REALLOC, FAIL */
    uint32_t tid, slot; /* writer thread, chunk slot */
    int chunk;          /* index into tr_file.chunks */
    uint64_t time, time2;
    uint32_t stack;
    uint64_t size, addr, addr2;
};

struct tr_stack {
    uint32_t id, kind, n, cut;
    uint64_t *frames;
    uint32_t tid; /* writer that defined it */
};

struct tr_chunk {
    uint64_t off;
    struct rip_chunk_header h;
    int crc_ok;    /* 1 sealed and crc matches, 0 unsealed, -1 bad crc */
    char name[17]; /* first THREADNAME, "" if none */
    int nevents;
};

struct tr_file {
    uint8_t *data;
    size_t size;
    struct rip_file_header hdr;
    int hdr_crc_ok;
    char err[768]; /* first damage found, "" when none */
    struct tr_chunk *chunks;
    int nchunks;
    struct tr_event *ev;
    int nev;
    struct tr_stack *st;
    int nst;
    int has_trailer;
    uint64_t tr_events, tr_stacks, tr_lost;
    uint32_t tr_open;
    int nmodules_chunks;
    int exe_in_modules;                  /* the last MODULES chunk names hdr exe */
    uint64_t exe_range_lo, exe_range_hi; /* first executable range of the exe */
    int nsettid;
};

#define TR_FAIL(f, ...)                                                                            \
    do {                                                                                           \
        if (!(f)->err[0])                                                                          \
            snprintf((f)->err, sizeof(f)->err, __VA_ARGS__);                                       \
    } while (0)

static void tr_push_event(struct tr_file *f, struct tr_event e)
{
    /* capacity doubles at each power of two (linear growth is quadratic
     * under ASan, whose realloc always copies) */
    if ((f->nev & (f->nev - 1)) == 0)
        f->ev = realloc(f->ev, (size_t)(f->nev ? 2 * f->nev : 1) * sizeof *f->ev);
    f->ev[f->nev++] = e;
}

static int tr_vget(const uint8_t **p, const uint8_t *end, uint64_t *v, struct tr_file *f,
                   uint64_t off)
{
    if (rip_get_varint(p, end, v)) {
        TR_FAIL(f, "bad varint in chunk at offset %llu", (unsigned long long)off);
        return -1;
    }
    return 0;
}

/* Decodes one EVENTS/SHARED chunk's payload. */
static void tr_decode(struct tr_file *f, int ci, const uint8_t *pl)
{
    struct tr_chunk *c = &f->chunks[ci];
    const uint8_t *p = pl, *end = pl + c->h.used;
    uint64_t t = c->h.base_time, a = 0, v;
    uint32_t tid = c->h.type == RIP_CHUNK_EVENTS ? c->h.tid : 0;
    uint64_t o = c->off;
    while (p < end) {
        uint8_t b0 = *p++;
        int op = b0 & RIP_B0_OP_MASK;
        unsigned unit = (b0 & RIP_B0_RAWADDR) ? 1 : 16;
        unsigned dtn = b0 >> RIP_B0_DT_SHIFT;
        struct tr_event e = {.op = op, .tid = tid, .slot = c->h.slot, .chunk = ci};
        /* byte 0's time delta counts for EXT too (timed EXT records; an
         * untimed one carries 0) */
        if ((op >= RIP_OP_ALLOC && op <= RIP_OP_FAIL) || op == RIP_OP_EXT) {
            uint64_t dt = dtn;
            if (dtn == RIP_B0_DT_VARINT && tr_vget(&p, end, &dt, f, o))
                return;
            t += dt;
            e.time = t;
        }
        switch (op) {
        case RIP_OP_ALLOC: {
            uint64_t id, sz, d;
            if (tr_vget(&p, end, &id, f, o) || tr_vget(&p, end, &sz, f, o) ||
                tr_vget(&p, end, &d, f, o))
                return;
            a += (uint64_t)rip_unzigzag(d) * unit;
            e.stack = (uint32_t)id, e.size = sz, e.addr = a;
            tr_push_event(f, e);
            c->nevents++;
            break;
        }
        case RIP_OP_FREE:
            if (tr_vget(&p, end, &v, f, o))
                return;
            a += (uint64_t)rip_unzigzag(v) * unit;
            e.addr = a;
            tr_push_event(f, e);
            c->nevents++;
            break;
        case RIP_OP_REALLOC: {
            uint64_t dt2, id, sz, d1, d2;
            if (tr_vget(&p, end, &dt2, f, o) || tr_vget(&p, end, &id, f, o) ||
                tr_vget(&p, end, &sz, f, o) || tr_vget(&p, end, &d1, f, o) ||
                tr_vget(&p, end, &d2, f, o))
                return;
            a += (uint64_t)rip_unzigzag(d1) * unit;
            e.addr = a;
            a += (uint64_t)rip_unzigzag(d2) * unit;
            e.addr2 = a;
            e.time2 = t + dt2;
            e.stack = (uint32_t)id, e.size = sz;
            tr_push_event(f, e);
            c->nevents++;
            break;
        }
        case RIP_OP_FAIL: {
            uint64_t id, sz;
            if (tr_vget(&p, end, &id, f, o) || tr_vget(&p, end, &sz, f, o))
                return;
            e.stack = (uint32_t)id, e.size = sz;
            tr_push_event(f, e);
            c->nevents++;
            break;
        }
        case RIP_OP_STACK: {
            uint64_t id, kind, nc, prev = 0;
            if (tr_vget(&p, end, &id, f, o) || tr_vget(&p, end, &kind, f, o) ||
                tr_vget(&p, end, &nc, f, o))
                return;
            if ((nc >> 1) > RIP_MAX_FRAMES) {
                TR_FAIL(f, "too many frames at chunk %llu", (unsigned long long)o);
                return;
            }
            struct tr_stack s = {(uint32_t)id,       (uint32_t)kind, (uint32_t)(nc >> 1),
                                 (uint32_t)(nc & 1), NULL,           tid};
            s.frames = calloc(s.n + 1, 8);
            for (uint32_t i = 0; i < s.n; i++) {
                if (tr_vget(&p, end, &v, f, o))
                    return;
                prev += (uint64_t)rip_unzigzag(v);
                s.frames[i] = prev;
            }
            f->st = realloc(f->st, (size_t)(f->nst + 1) * sizeof *f->st);
            f->st[f->nst++] = s;
            break;
        }
        case RIP_OP_EXT: {
            uint64_t sub, len;
            if (tr_vget(&p, end, &sub, f, o) || tr_vget(&p, end, &len, f, o))
                return;
            if (len > RIP_MAX_EXT_LEN || len > (uint64_t)(end - p)) {
                TR_FAIL(f, "bad EXT length at chunk %llu", (unsigned long long)o);
                return;
            }
            if (sub == RIP_EXT_THREADNAME && !c->name[0] && len <= 16) {
                memcpy(c->name, p, len);
                c->name[len] = 0;
            } else if (sub == RIP_EXT_SETTHREAD) {
                const uint8_t *q = p;
                if (tr_vget(&q, p + len, &v, f, o))
                    return;
                tid = (uint32_t)v;
                f->nsettid++;
            }
            p += len;
            break;
        }
        default:
            TR_FAIL(f, "bad op %d at chunk %llu", op, (unsigned long long)o);
            return;
        }
    }
    if (c->nevents != (int)c->h.events)
        TR_FAIL(f, "chunk at %llu: header says %u events, decoded %d", (unsigned long long)o,
                c->h.events, c->nevents);
}

static void tr_modules(struct tr_file *f, const uint8_t *p, uint32_t used)
{
    const uint8_t *end = p + used;
    uint32_t count;
    if (used < 12) {
        TR_FAIL(f, "short MODULES chunk");
        return;
    }
    memcpy(&count, p + 8, 4);
    p += 12;
    const char *exe = (const char *)f->data + RIP_HDR_EXE_OFF;
    f->exe_in_modules = 0;
    for (uint32_t i = 0; i < count; i++) {
        uint64_t base;
        uint16_t plen, nr;
        uint8_t idl;
        if (end - p < 10)
            goto bad;
        memcpy(&base, p, 8);
        memcpy(&plen, p + 8, 2);
        p += 10;
        if (end - p < plen + 1)
            goto bad;
        int is_exe = plen == f->hdr.exe_len && !memcmp(p, exe, plen);
        p += plen;
        idl = *p++;
        if (end - p < idl + 2)
            goto bad;
        p += idl;
        memcpy(&nr, p, 2);
        p += 2;
        if (end - p < (long)nr * 16)
            goto bad;
        if (is_exe && nr) {
            f->exe_in_modules = 1;
            memcpy(&f->exe_range_lo, p, 8);
            memcpy(&f->exe_range_hi, p + 8, 8);
        }
        p += (size_t)nr * 16;
    }
    return;
bad:
    TR_FAIL(f, "damaged MODULES chunk");
}

/* Reads and decodes path. Returns 0 when the file could be read at all. */
static int tr_read(const char *path, struct tr_file *f)
{
    memset(f, 0, sizeof *f);
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        TR_FAIL(f, "open %s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    fstat(fd, &st);
    f->size = (size_t)st.st_size;
    f->data = malloc(f->size + 1);
    size_t got = 0;
    while (got < f->size) {
        ssize_t r = pread(fd, f->data + got, f->size - got, (off_t)got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (got < RIP_HEADER_SIZE) {
        TR_FAIL(f, "%s: short file (%zu bytes)", path, got);
        return -1;
    }
    memcpy(&f->hdr, f->data, sizeof f->hdr);
    uint8_t hdr[RIP_HEADER_SIZE];
    memcpy(hdr, f->data, RIP_HEADER_SIZE);
    memset(hdr + 72, 0, 4);
    f->hdr_crc_ok = rip_crc32c(0, hdr, RIP_HEADER_SIZE) == f->hdr.crc;
    uint64_t off = RIP_HEADER_SIZE;
    while (off + RIP_CHUNK_HDR_SIZE <= f->size) {
        struct tr_chunk c;
        memset(&c, 0, sizeof c);
        c.off = off;
        memcpy(&c.h, f->data + off, sizeof c.h);
        if (c.h.magic != RIP_CHUNK_MAGIC) {
            TR_FAIL(f, "bad chunk magic at offset %llu", (unsigned long long)off);
            break;
        }
        uint64_t total = (RIP_CHUNK_HDR_SIZE + (uint64_t)c.h.capacity + RIP_ALIGN - 1) &
                         ~(uint64_t)(RIP_ALIGN - 1);
        if (c.h.capacity > RIP_CHUNK_MAX_CAPACITY || off + total > f->size ||
            c.h.used > c.h.capacity) {
            TR_FAIL(f, "chunk at offset %llu runs past the file", (unsigned long long)off);
            break;
        }
        const uint8_t *pl = f->data + off + RIP_CHUNK_HDR_SIZE;
        if (c.h.flags & RIP_CHUNK_F_SEALED)
            c.crc_ok = rip_chunk_crc(&c.h, pl) == c.h.crc ? 1 : -1;
        if (c.crc_ok < 0)
            TR_FAIL(f, "bad crc in chunk at offset %llu", (unsigned long long)off);
        f->chunks = realloc(f->chunks, (size_t)(f->nchunks + 1) * sizeof c);
        f->chunks[f->nchunks++] = c;
        int ci = f->nchunks - 1;
        if (c.h.type == RIP_CHUNK_EVENTS || c.h.type == RIP_CHUNK_SHARED) {
            tr_decode(f, ci, pl);
        } else if (c.h.type == RIP_CHUNK_MODULES) {
            f->nmodules_chunks++;
            tr_modules(f, pl, c.h.used);
        } else if (c.h.type == RIP_CHUNK_TRAILER && c.h.used >= 48) {
            f->has_trailer = 1;
            memcpy(&f->tr_events, pl, 8);
            memcpy(&f->tr_stacks, pl + 24, 8);
            memcpy(&f->tr_lost, pl + 32, 8);
            memcpy(&f->tr_open, pl + 40, 4);
        }
        off += total;
    }
    return 0;
}

static void tr_free_file(struct tr_file *f)
{
    for (int i = 0; i < f->nst; i++)
        free(f->st[i].frames);
    free(f->st);
    free(f->ev);
    free(f->chunks);
    free(f->data);
    memset(f, 0, sizeof *f);
}

__attribute__((unused)) static const struct tr_stack *tr_stack_by_id(const struct tr_file *f,
                                                                     uint32_t id)
{
    for (int i = 0; i < f->nst; i++)
        if (f->st[i].id == id)
            return &f->st[i];
    return NULL;
}

/* ---- files and directories ---------------------------------------------- */

/* Makes a fresh directory under TMPDIR (or /tmp) into buf. */
static void tr_mkdtemp(char *buf, size_t size, const char *tag)
{
    const char *t = getenv("TMPDIR");
    snprintf(buf, size, "%s/rh-%s-XXXXXX", t && *t ? t : "/tmp", tag);
    if (!mkdtemp(buf)) {
        perror("mkdtemp");
        exit(2);
    }
}

/* Removes the directory and the files in it. */
static void tr_rmdir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[4096];
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

/* Number of entries (not . or ..) in dir. */
__attribute__((unused)) static int tr_count_files(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    if (d)
        closedir(d);
    return n;
}

/* Enables tracking into dir with the given settings (0 = default). */
__attribute__((unused)) static int tr_enable(const char *dir, unsigned depth, unsigned trackers,
                                             unsigned buffer)
{
    struct rheaper_config c = {depth, trackers, buffer, dir, 0.0, 0};
    return rheaper_enable(&c);
}

/* Events of one op and tid, in stream order. */
__attribute__((unused)) static int tr_count(const struct tr_file *f, int op, uint32_t tid)
{
    int n = 0;
    for (int i = 0; i < f->nev; i++)
        if (f->ev[i].op == op && (!tid || f->ev[i].tid == tid))
            n++;
    return n;
}

#endif
