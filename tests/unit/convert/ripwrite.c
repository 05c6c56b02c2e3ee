/* ripwrite.c: the test-only rip writer (see ripwrite.h).
 *
 * Builds the file in memory: the 4096-byte header, then chunks appended in the
 * order the test ends them. Aborts on out-of-memory: it is test code.
 */
#include "ripwrite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *rw_xrealloc(void *p, size_t n)
{
    p = realloc(p, n);
    if (!p) {
        fprintf(stderr, "ripwrite: out of memory\n");
        abort();
    }
    return p;
}

static void rw_file_reserve(struct rw_file *f, size_t need)
{
    if (f->len + need <= f->cap)
        return;
    size_t ncap = f->cap ? f->cap : 65536;
    while (ncap < f->len + need)
        ncap *= 2;
    f->buf = rw_xrealloc(f->buf, ncap);
    f->cap = ncap;
    f->hdr = (struct rip_file_header *)f->buf;
}

void rw_header_crc(struct rw_file *f)
{
    f->hdr->crc = 0;
    f->hdr->crc = rip_crc32c(0, f->buf, RIP_HEADER_SIZE);
}

void rw_new(struct rw_file *f, uint32_t pid, const char *exe, const char *cmd, size_t cmd_len)
{
    memset(f, 0, sizeof *f);
    rw_file_reserve(f, RIP_HEADER_SIZE);
    memset(f->buf, 0, RIP_HEADER_SIZE);
    f->len = RIP_HEADER_SIZE;
    struct rip_file_header *h = f->hdr;
    memcpy(h->magic, RIP_MAGIC, 8);
    h->version = RIP_VERSION;
    h->header_size = RIP_HEADER_SIZE;
    h->pid = pid;
    h->ppid = 1;
    h->start_realtime_ns = 1700000000ull * 1000000000ull + 123456789ull;
    h->start_mono_ns = RW_T0;
    h->start_tick = RW_T0;
    h->clock_kind = RIP_CLOCK_MONO;
    h->tick_shift = 0;
    h->max_stack_depth = 64;
    h->chunk_size = 65536;
    h->exe_len = (uint32_t)strlen(exe);
    h->cmd_len = (uint32_t)cmd_len;
    h->ticks_per_sec = 1000000000ull;
    memcpy(f->buf + RIP_HDR_EXE_OFF, exe, strlen(exe));
    memcpy(f->buf + RIP_HDR_CMD_OFF, cmd, cmd_len);
    rw_header_crc(f);
}

void rw_begin(struct rw_chunk *c, struct rw_file *f, int type, uint32_t slot, uint32_t tid,
              uint64_t base)
{
    memset(c, 0, sizeof *c);
    c->f = f;
    c->h.magic = RIP_CHUNK_MAGIC;
    c->h.type = (uint8_t)type;
    c->h.header_size = RIP_CHUNK_HDR_SIZE;
    c->h.slot = slot;
    c->h.tid = tid;
    c->h.base_time = RW_T0 + base;
    c->time = RW_T0 + base;
}

static void rw_put(struct rw_chunk *c, const void *b, size_t n)
{
    if (c->used + n > c->cap) {
        size_t ncap = c->cap ? c->cap * 2 : 1024;
        while (ncap < c->used + n)
            ncap *= 2;
        c->p = rw_xrealloc(c->p, ncap);
        c->cap = ncap;
    }
    memcpy(c->p + c->used, b, n);
    c->used += n;
}

static void rw_var(struct rw_chunk *c, uint64_t v)
{
    uint8_t b[10];
    rw_put(c, b, (size_t)(rip_put_varint(b, v) - b));
}

/* Byte 0 plus the time varint; returns nothing, advances c->time. */
static void rw_head(struct rw_chunk *c, unsigned op, int raw_addr, uint64_t t)
{
    uint64_t abs = RW_T0 + t;
    uint64_t dt = abs - c->time;
    c->time = abs;
    uint8_t b0 = (uint8_t)(op | (raw_addr ? RIP_B0_RAWADDR : 0));
    if (dt < RIP_B0_DT_VARINT) {
        b0 |= (uint8_t)(dt << RIP_B0_DT_SHIFT);
        rw_put(c, &b0, 1);
    } else {
        b0 |= (uint8_t)(RIP_B0_DT_VARINT << RIP_B0_DT_SHIFT);
        rw_put(c, &b0, 1);
        rw_var(c, dt);
    }
    c->events++;
}

/* Address delta in the record's units. */
static void rw_addr(struct rw_chunk *c, uint64_t addr, int raw)
{
    int64_t d = (int64_t)(addr - c->addr);
    c->addr = addr;
    rw_var(c, rip_zigzag(raw ? d : d / 16));
}

static int rw_raw_needed(const struct rw_chunk *c, uint64_t a, uint64_t b)
{
    return ((a - c->addr) & 15) || ((b - a) & 15);
}

void rw_alloc(struct rw_chunk *c, uint64_t t, uint64_t stack, uint64_t size, uint64_t addr)
{
    int raw = rw_raw_needed(c, addr, addr);
    rw_head(c, RIP_OP_ALLOC, raw, t);
    rw_var(c, stack);
    rw_var(c, size);
    rw_addr(c, addr, raw);
}

void rw_free(struct rw_chunk *c, uint64_t t, uint64_t addr)
{
    int raw = rw_raw_needed(c, addr, addr);
    rw_head(c, RIP_OP_FREE, raw, t);
    rw_addr(c, addr, raw);
}

void rw_realloc(struct rw_chunk *c, uint64_t t, uint64_t dt2, uint64_t stack, uint64_t size,
                uint64_t old_addr, uint64_t new_addr)
{
    int raw = rw_raw_needed(c, old_addr, new_addr);
    rw_head(c, RIP_OP_REALLOC, raw, t);
    rw_var(c, dt2);
    rw_var(c, stack);
    rw_var(c, size);
    rw_addr(c, old_addr, raw);
    rw_addr(c, new_addr, raw);
}

void rw_fail(struct rw_chunk *c, uint64_t t, uint64_t stack, uint64_t size)
{
    rw_head(c, RIP_OP_FAIL, 0, t);
    rw_var(c, stack);
    rw_var(c, size);
}

void rw_stack(struct rw_chunk *c, uint64_t id, unsigned kind, const uint64_t *frames, unsigned n,
              int cut)
{
    uint8_t b0 = RIP_OP_STACK;
    rw_put(c, &b0, 1);
    rw_var(c, id);
    rw_var(c, kind);
    rw_var(c, ((uint64_t)n << 1) | (cut ? 1 : 0));
    uint64_t prev = 0;
    for (unsigned i = 0; i < n; i++) {
        rw_var(c, rip_zigzag((int64_t)(frames[i] - prev)));
        prev = frames[i];
    }
}

static void rw_ext(struct rw_chunk *c, unsigned sub, const void *b, size_t n)
{
    uint8_t b0 = RIP_OP_EXT;
    rw_put(c, &b0, 1);
    rw_var(c, sub);
    rw_var(c, n);
    rw_put(c, b, n);
}

void rw_threadname(struct rw_chunk *c, const char *name)
{
    rw_ext(c, RIP_EXT_THREADNAME, name, strlen(name));
}

void rw_setthread(struct rw_chunk *c, uint32_t tid)
{
    uint8_t b[10];
    rw_ext(c, RIP_EXT_SETTHREAD, b, (size_t)(rip_put_varint(b, tid) - b));
}

void rw_kindname(struct rw_chunk *c, uint64_t kind, const char *name)
{
    uint8_t b[10 + 256];
    size_t k = (size_t)(rip_put_varint(b, kind) - b), n = strlen(name);
    if (n > 256)
        n = 256;
    memcpy(b + k, name, n);
    rw_ext(c, RIP_EXT_KINDNAME, b, k + n);
}

void rw_pool_reset(struct rw_chunk *c, uint64_t t, uint64_t pool)
{
    uint8_t b[10];
    rw_head(c, RIP_OP_EXT, 0, t); /* a timed EXT: byte 0 carries the time delta */
    rw_var(c, RIP_EXT_POOLRESET);
    size_t k = (size_t)(rip_put_varint(b, pool) - b);
    rw_var(c, k);
    rw_put(c, b, k);
}

void rw_raw(struct rw_chunk *c, const void *bytes, size_t n)
{
    rw_put(c, bytes, n);
}

void rw_end(struct rw_chunk *c, int sealed, uint64_t calib_ns)
{
    struct rw_file *f = c->f;
    size_t total = (RIP_CHUNK_HDR_SIZE + c->used + RIP_ALIGN - 1) & ~(size_t)(RIP_ALIGN - 1);
    c->h.capacity = (uint32_t)(total - RIP_CHUNK_HDR_SIZE);
    c->h.used = (uint32_t)c->used;
    c->h.calib_tick = RW_T0 + calib_ns;
    c->h.calib_ns = RW_T0 + calib_ns;
    c->h.events = c->events;
    c->h.seq = 0;
    c->h.crc = 0;
    if (!sealed && (c->h.type == RIP_CHUNK_EVENTS || c->h.type == RIP_CHUNK_SHARED))
        f->unsealed++;
    if (sealed) {
        c->h.flags |= RIP_CHUNK_F_SEALED;
        c->h.crc = rip_chunk_crc(&c->h, c->p ? c->p : (const uint8_t *)"");
    }
    rw_file_reserve(f, total);
    memset(f->buf + f->len, 0, total);
    memcpy(f->buf + f->len, &c->h, RIP_CHUNK_HDR_SIZE);
    if (c->used)
        memcpy(f->buf + f->len + RIP_CHUNK_HDR_SIZE, c->p, c->used);
    f->len += total;
    free(c->p);
    c->p = NULL;
}

static void rw_u(struct rw_chunk *c, uint64_t v, unsigned n)
{
    uint8_t b[8];
    for (unsigned i = 0; i < n; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    rw_put(c, b, n);
}

void rw_module(struct rw_file *f, uint64_t base, const char *path, const uint8_t *build_id,
               unsigned build_id_len, uint64_t start, uint64_t end)
{
    struct rw_chunk c;
    rw_begin(&c, f, RIP_CHUNK_MODULES, RIP_SLOT_SHARED, 0, 0);
    rw_u(&c, RW_T0, 8);
    rw_u(&c, 1, 4);
    rw_u(&c, base, 8);
    rw_u(&c, strlen(path), 2);
    rw_put(&c, path, strlen(path));
    rw_u(&c, build_id_len, 1);
    rw_put(&c, build_id, build_id_len);
    rw_u(&c, 1, 2);
    rw_u(&c, start, 8);
    rw_u(&c, end, 8);
    rw_end(&c, 1, 0);
}

void rw_trailer(struct rw_file *f, uint64_t events, uint64_t end_ns, uint64_t stacks, uint64_t lost)
{
    struct rw_chunk c;
    rw_begin(&c, f, RIP_CHUNK_TRAILER, RIP_SLOT_SHARED, 0, 0);
    rw_u(&c, events, 8);
    rw_u(&c, RW_T0 + end_ns, 8);
    rw_u(&c, RW_T0 + end_ns, 8);
    rw_u(&c, stacks, 8);
    rw_u(&c, lost, 8);
    rw_u(&c, f->unsealed, 4);
    rw_u(&c, 0, 4);
    rw_end(&c, 1, end_ns);
}

int rw_save(const struct rw_file *f, const char *path)
{
    FILE *fp = fopen(path, "wb");
    if (!fp)
        return -1;
    int ok = fwrite(f->buf, 1, f->len, fp) == f->len;
    if (fclose(fp) != 0)
        ok = 0;
    return ok ? 0 : -1;
}

void rw_free_file(struct rw_file *f)
{
    free(f->buf);
    memset(f, 0, sizeof *f);
}
