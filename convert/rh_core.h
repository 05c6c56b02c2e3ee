/* rh_core.h: the SQLite-free core of the converter.
 *
 * Reading a rip file (rh_rip.c: the file, its chunks, calibration, modules;
 * the one walk of the chunk sequence every reader shares), decoding its
 * records (rh_stream_decode.c), the blocks a fork child inherits
 * (rh_inherit.c), the time-ordered merge that pairs frees with allocations
 * (rh_merge.c), region allocators (rh_regions.c), the aggregates computed
 * while merging (rh_aggregate.c), kind names (rh_kinds.c) and memory
 * samples (rh_memory.c's decoder). Nothing here needs SQLite or libdw: the
 * library rheaper_convert_core, the fuzzer and the live view build on it.
 * The database side is rh_db.h; the whole conversion rh_convert.h.
 * Prototypes are grouped under the file that defines them.
 */
#ifndef RH_CORE_H
#define RH_CORE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "rh_schema.h"
#include "rh_util.h"
#include "rip_format.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "rheaper-convert reads little-endian rip files by plain loads; port rh_rip.c first"
#endif

#ifndef RH_HIDDEN
#define RH_HIDDEN __attribute__((visibility("hidden")))
#endif

/* The modules of MODULES snapshots (rh_symbolize.h has the type). */
struct rh_module;

/* ---- rh_rip.c: the rip file, its chunks, calibration, modules ----------- */

/* What a stream decoder yields. REALLOC is split into its two halves. */
enum rh_ev_op {
    RH_EV_ALLOC = 1,
    RH_EV_FREE = 2,
    RH_EV_RFREE = 3,  /* free half of a REALLOC, at t */
    RH_EV_RALLOC = 4, /* alloc half of a REALLOC, at t + dt2 */
    RH_EV_FAIL = 5,
    RH_EV_POOLRESET = 6, /* every live block of pool `addr` ends (EXT POOLRESET) */
    RH_EV_EXT = 7,       /* an mmap/munmap/mremap/mallopt call (EXT 10..13) */
    RH_EV_CPU = 8,       /* one CPU sample of stack `stack` standing for `size` sampling
                            periods (EXT CPUSAMPLE) */
    RH_EV_REGION = 9,    /* region `addr` (a pool id) has parent pool id `size` & 0xffff,
                            name kind `stack`; bit 16 of size: created; bits 17..32: the
                            creating function's kind (EXT REGION) */
};

struct rh_event {
    uint64_t time;  /* event time units (tick >> tick_shift); rh_rip_ns() converts */
    uint64_t stack; /* stack id as recorded (ALLOC, RALLOC, FAIL) */
    uint64_t size;
    uint64_t addr;   /* block address (old address for RFREE) */
    uint32_t thread; /* threads.id, see rh_rip_thread() */
    uint8_t op;      /* enum rh_ev_op */
    uint8_t cls;     /* merge class at equal time: 0 frees, 1 allocations */
    uint8_t ext_sub; /* RH_EV_EXT: the EXT subtype */
    uint32_t ext_len;     /* RH_EV_EXT: body bytes, the stack id first */
    const uint8_t *ext;   /* RH_EV_EXT: the EXT body, inside the stream's chunk
                           * (valid until the stream's next event) */
};

struct rh_chunk {
    uint64_t off;           /* file offset of the chunk header */
    const uint8_t *payload; /* inside the mapping */
    uint32_t used;          /* payload bytes to decode */
    uint32_t slot, tid;
    uint64_t base_time;
    uint8_t type;
    uint8_t truncated; /* cut by the end of the file */
    uint8_t open;      /* followed while its writer may still add records (live view) */
    int32_t next;      /* next chunk of the same stream, or -1 */
};

/* A stack definition. Created on first definition or first use. */
struct rh_stack {
    uint64_t id;
    size_t frames; /* index of frame 0 in rip->frames */
    uint32_t nframes;
    uint32_t kind; /* wrap-table kind number */
    uint8_t defined;
    uint8_t cut;
    uint8_t used;        /* an event referenced it */
    uint8_t provisional; /* a row was written before the definition was seen */
};

struct rh_thread {
    uint32_t tid;
    uint8_t named;
    char name[17];
    uint64_t name_time; /* stream time (event units) of the THREADNAME that set name */
};

/* Decoder state of one stream (one slot's EVENTS chunks, or the SHARED ones). */
struct rh_stream {
    int32_t first, last; /* chunk indexes */
    int32_t cur;         /* chunk being decoded, -1 when done */
    int shared;
    const uint8_t *p, *end;
    uint64_t time, addr;  /* delta state of the current chunk */
    uint32_t tid, thread; /* current writer thread */
    uint64_t last_time;   /* last time yielded (out-of-order detection) */
    int have_pending;
    struct rh_event pending; /* REALLOC alloc half */
    struct rh_event ext_event; /* a timed EXT record being decoded (POOLRESET) */
    /* Following a growing file (convert/live/): at the end of the stream's last
     * chunk, or at a record not yet whole in an open chunk, rh_stream_next()
     * returns 0 and stays there, so a later call goes on when more is written. */
    int follow;
};

struct rh_rip {
    const char *name; /* path or label, for messages */
    const uint8_t *base;
    size_t size;
    int mapped;
    unsigned file_mode; /* the rip file's permission bits (0: not a file) */
    FILE *warn;     /* NULL: silent */
    unsigned nwarn; /* warnings issued (printed up to a limit) */
    char err[768];  /* the error line of a failed rh_rip_open_*() */

    struct rip_file_header hdr;
    char exe[RIP_HDR_EXE_MAX + 1];
    char args[RIP_HDR_CMD_MAX + 1]; /* cmdline joined by spaces */
    /* cmdline quoted for a POSIX shell (rh_rip.c): each byte takes at most 4 */
    char cmdline[4 * RIP_HDR_CMD_MAX + 16];

    struct rh_chunk *chunks;
    size_t nchunks, capchunks;
    struct rh_stream *streams;
    size_t nstreams;

    /* calibration: (tick, ns) pairs sorted and monotone */
    struct rh_calib {
        uint64_t tick;
        uint64_t ns;
    } * calib;
    size_t ncalib, capcalib;
    uint64_t rate_ns, rate_ticks; /* extrapolation rate: rate_ns per rate_ticks */

    struct rh_module *mods;
    size_t nmods, capmods;

    int has_trailer;
    uint64_t tr_events, tr_end_tick, tr_end_ns, tr_lost;
    uint32_t tr_open_chunks;
    int tr_has_reentered;   /* the trailer has the v2 field */
    uint64_t tr_reentered;  /* calls passed through unrecorded by re-entry */
    int tr_has_end_reason;  /* the trailer has the end_reason field */
    uint32_t tr_end_reason; /* RIP_END_*: 1 = cut at the size limit */
    int tr_has_stream;        /* v3, streaming: the trailer has the stream fields */
    uint32_t tr_stream_state; /* RIP_STREAM_*: 2 = stopped when the queue was full */
    uint64_t tr_stream_peak;  /* the most bytes the stream's queue held */
    int tr_has_cpu;           /* the trailer has the CPU sample counts */
    uint64_t tr_cpu_samples, tr_cpu_dropped;
    uint32_t cpu_hz, cpu_signal; /* header (v3): 0 when CPU sampling was off */
    uint64_t cpu_samples;        /* CPUSAMPLE records decoded */
    uint64_t mem_samples;        /* MEMSAMPLE records decoded (rh_memory.c) */
    /* v3, sampling (header flag RIP_HDR_F_SAMPLED; trailer 64..79) */
    uint32_t sample_mode;       /* 0 full, RIP_SAMPLE_RATE or RIP_SAMPLE_BYTES */
    uint32_t sample_big;        /* bytes mode: blocks >= N always recorded, weight 1
                                   (header mode RIP_SAMPLE_BYTES_BIG) */
    uint32_t sample_seeded;     /* RHEAPER_SAMPLE_SEED was given */
    double sample_rate;         /* rate mode: the probability r */
    uint64_t sample_bytes;      /* bytes mode: the mean N */
    int tr_has_sample;          /* the trailer has the v3 sampling fields */
    uint64_t tr_sample_dropped; /* sampled blocks not recorded (the set was full) */
    uint64_t tr_sample_peak;    /* most sampled blocks live at once */

    /* v3, servers (FORMAT.md "Servers"): the fork origin (header
     * flag RIP_HDR_F_ORIGIN) and the title block of the trailer */
    int has_origin;
    uint32_t origin_ppid;
    uint64_t origin_mono_ns, origin_tick;
    char origin_path[RIP_HDR_ORIGIN_PATH_MAX + 1];
    int tr_has_title;
    uint32_t tr_flags;        /* RIP_TR_F_* */
    char title[RIP_TRAILER_TITLE_MAX + 1]; /* joined by spaces */
    char comm[17];

    /* servers: blocks inherited at the fork, live from time 0 (rh_inherit.c);
     * NULL: none */
    struct rh_inherit *inherit;
    /* region allocators (rh_regions.c); NULL: none seen */
    struct rh_regions *regions;

    struct rh_stack *stacks;
    size_t nstacks, capstacks;
    struct rh_map stack_map;
    uint64_t *frames;
    size_t nframes, capframes;

    struct rh_thread *threads; /* threads.id = index + 1 */
    size_t nthreads, capthreads;
    struct rh_map thread_map;

    /* damage and counters */
    int cut_short;
    int damaged;
    uint64_t damaged_chunks;
    uint64_t out_of_order;
    uint64_t events, allocs, frees, reallocs; /* records decoded */
    uint64_t bytes_done;                      /* chunk bytes fully decoded, for progress */
    int oom;

    /* where the chunk walk is (rh_rip_walk in rh_rip.c), kept between the
     * polls of a file still being written */
    struct rh_rip_walk {
        int follow;    /* the file is still being written (rh_rip_follow_start) */
        int header;    /* the file header was read */
        int stuck;     /* damage the walk does not go past (or the reader stopped it) */
        int bad_tries; /* polls the chunk at off has failed its checks */
        uint64_t off;  /* the next chunk header, 0: not started */
        struct rh_map slots; /* slot (1 << 32: SHARED) -> stream index */
        size_t capstreams;
        uint64_t unsealed, unsealed_at_trailer; /* EVENTS/SHARED chunks not sealed */
    } walk;
};

/* Opens and indexes a rip file: maps it read-only, validates the header, walks
 * and checks the chunks, reads calibration, MODULES and TRAILER, and prepares
 * one stream per slot plus the SHARED stream. Damage that leaves something to
 * convert is warned about on `warn` and recorded in r (cut_short, damaged).
 * Returns 0, or -1 with the one-line error in r->err (no "rheaper-convert: "
 * prefix). r must be zeroed; call rh_rip_close() in both cases. */
RH_HIDDEN int rh_rip_open_file(struct rh_rip *r, const char *path, FILE *warn);
/* The same on a caller-owned buffer that outlives r (for the fuzzer). */
RH_HIDDEN int rh_rip_open_mem(struct rh_rip *r, const uint8_t *buf, size_t len, const char *name,
                              FILE *warn);
RH_HIDDEN void rh_rip_close(struct rh_rip *r);

/* Prints one warning line "rheaper-convert: NAME: ..." (rate-limited). */
RH_HIDDEN void rh_rip_warn(struct rh_rip *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Event time units -> ns since enable, piecewise linear over the calibration
 * pairs, extrapolated with the widest span's rate. Monotone, never negative. */
RH_HIDDEN int64_t rh_rip_ns(const struct rh_rip *r, uint64_t time);
/* The same, faster for times in order: *hint (0 at first, then kept by the
 * caller) remembers the calibration segment of the last call. */
RH_HIDDEN int64_t rh_rip_ns_hint(const struct rh_rip *r, uint64_t time, size_t *hint);

/* The sender's address that rheaper collect stored in the header of a
 * streamed profile (RIP_HDR_F_STREAMED), as text: an IPv4 address for a
 * v4-mapped one. */
RH_HIDDEN void rh_rip_peer(const struct rh_rip *r, char *out, size_t size);

/* The one check of a chunk header every reader of the format makes (the
 * converter, the live follower, `list`, `collect`): NULL when h's magic,
 * header size, capacity (at most RIP_CHUNK_MAX_CAPACITY), used (at most the
 * capacity) and type are those of a chunk a reader can walk past, else what
 * is wrong ("bad magic", ...). It does not look at the payload or the file. */
RH_HIDDEN const char *rh_rip_chunk_check(const struct rip_chunk_header *h);
/* The distance from a chunk's start to the next chunk's: its header and
 * capacity, rounded up to RIP_ALIGN (FORMAT.md "Layout"). */
static inline uint64_t rh_rip_chunk_stride(const struct rip_chunk_header *h)
{
    return (RIP_CHUNK_HDR_SIZE + (uint64_t)h->capacity + RIP_ALIGN - 1) &
           ~(uint64_t)(RIP_ALIGN - 1);
}

/* The checksum a file header of RIP_HEADER_SIZE bytes at b should carry (its
 * crc field, bytes 72..75, counted as zero). */
RH_HIDDEN uint32_t rh_rip_header_crc(const uint8_t *b);
/* The one check of a file header's first n bytes that the readers share
 * (the converter, the live follower, `view`, `list`, `collect`): NULL when b
 * holds a whole header with the magic, a version this reader knows and the
 * right header size, with *h filled and *crc_ok (when not NULL) set to
 * whether its checksum matches; else what is wrong. */
RH_HIDDEN const char *rh_rip_header_check(const uint8_t *b, size_t n, struct rip_file_header *h,
                                          int *crc_ok);

/* Following a file still being written (the live view): r zeroed, base a
 * mapping of the file that stays valid as it grows (a reservation past its
 * end), name for messages, warn as for rh_rip_open_file. */
RH_HIDDEN void rh_rip_follow_start(struct rh_rip *r, const uint8_t *base, const char *name,
                                   FILE *warn);
/* One poll: the first `size` bytes of the file are written (the size fstat
 * gives now; never less than before). Reads the header once it is there,
 * walks the chunks written since the last poll with the rules of a growing
 * file (a chunk not whole yet is waited for; a header or checksum that stays
 * wrong for a while is damage, warned about once), settles the calibration,
 * and re-reads `used` of every chunk still open, so rh_stream_next (which
 * waits at the end of an open chunk) goes on with what was added. Returns
 * 1 when something new was found, 0 when not, -1 with r->err (a header this
 * reader refuses, out of memory). */
RH_HIDDEN int rh_rip_follow_poll(struct rh_rip *r, size_t size);

/* The chunk sequence as every reader walks it: a source of bytes (a mapping,
 * or a descriptor read with pread) and, at an offset, what is there. */
struct rh_rip_src {
    const uint8_t *base; /* [0, size) mapped, or NULL: read fd */
    int fd;
    uint64_t size; /* bytes of the file (written so far) */
    int growing;   /* a writer may be storing into the mapping now */
};
enum rh_rip_at_kind {
    RH_AT_CHUNK = 0,     /* a chunk header that passes rh_rip_chunk_check */
    RH_AT_END = 1,       /* the end of the file (or a read error) */
    RH_AT_TAIL = 2,      /* fewer bytes than a chunk header before the end (zero: all 0) */
    RH_AT_UNWRITTEN = 3, /* a header of zeros: reserved, not written (yet) */
    RH_AT_BAD = 4,       /* a header that fails the check (why) */
};
struct rh_rip_at {
    int kind;                  /* enum rh_rip_at_kind */
    uint64_t off;              /* where */
    struct rip_chunk_header h; /* RH_AT_CHUNK, RH_AT_BAD */
    const char *why;           /* RH_AT_BAD: rh_rip_chunk_check's answer */
    uint64_t stride;           /* RH_AT_CHUNK: to the next chunk */
    uint64_t avail;            /* RH_AT_CHUNK: payload bytes the file holds */
    int whole;                 /* RH_AT_CHUNK: its capacity is inside the file */
    int sealed;                /* RH_AT_CHUNK: RIP_CHUNK_F_SEALED */
    int zero;                  /* RH_AT_TAIL: its bytes are all zero */
};
/* What is at off of src, into *at; returns at->kind. From a mapping a writer
 * may be storing into (src->growing), `used` and `flags` are loaded first with
 * acquire (a writer stores `used` after each whole record, SEALED last), so a
 * file being written reads right. The payload is not looked at (its checksum
 * is the caller's to check). */
RH_HIDDEN int rh_rip_at(const struct rh_rip_src *src, uint64_t off, struct rh_rip_at *at);

/* What `rheaper list` shows of a rip file, read from the file header, the
 * chunk headers and the trailer without decoding a record. */
struct rh_rip_scan {
    struct rip_file_header hdr;
    char exe[RIP_HDR_EXE_MAX + 1]; /* the executable's path at start */
    uint8_t title[256];            /* the process title: the trailer's, else */
    size_t title_len;              /* the command line at start (NUL-separated) */
    int damaged;  /* an unknown version or header size, a chunk header that is
                     not one, or a chunk past the end of the file */
    int trailer;  /* a trailer was read: tr_* are set */
    uint32_t end_reason;
    uint64_t tr_events, tr_end_ns;
    uint64_t last_calib_ns; /* the latest chunk calibration (ns) */
    uint64_t chunk_events;  /* the events of the chunk headers */
};
/* Scans the rip file open on fd (size bytes) into s, through rh_rip_at
 * and rh_rip_trailer (no checksum verified, no record decoded). Returns 0,
 * or -1 when it is not a rip file (no whole header with the magic). */
RH_HIDDEN int rh_rip_scan(int fd, uint64_t size, struct rh_rip_scan *s);


/* ---- rh_stream_decode.c: record decoding, stacks and threads ------------ */

/* Yields the next event of stream s in stream order. STACK and EXT records are
 * consumed on the way (stack definitions, thread names, SETTHREAD). A record
 * that does not decode ends its chunk with a warning and marks r damaged.
 * Returns 1 with *ev filled, 0 at the end of the stream, -1 on out-of-memory. */
RH_HIDDEN int rh_stream_next(struct rh_rip *r, struct rh_stream *s, struct rh_event *ev);

/* The stack entry for id, created (undefined) if new. Returns its index, or
 * UINT32_MAX on out-of-memory. */
RH_HIDDEN uint32_t rh_rip_stack(struct rh_rip *r, uint64_t id);

/* threads.id for a kernel tid, assigned in order of first appearance.
 * Returns 0 on out-of-memory. */
RH_HIDDEN uint32_t rh_rip_thread(struct rh_rip *r, uint32_t tid);

/* ---- rh_inherit.c: the blocks a fork child starts with ------------------- */

struct rh_inh_block {
    uint64_t addr, size;
    uint64_t key;     /* the parent's stack id */
    size_t frames;    /* index of frame 0 in rh_inherit.frames */
    uint32_t nframes;
    uint32_t kind;
    uint8_t cut;
};

struct rh_inherit {
    struct rh_inh_block *blocks;
    size_t nblocks, capblocks;
    uint64_t *frames;
    size_t nframes, capframes;
    uint64_t bytes;    /* of all blocks */
    uint32_t *si;      /* each block's stack index in the child (rh_inherit_apply) */
    uint32_t thread;   /* the child's thread id "inherited" */
    uint32_t ppid;
    int64_t fork_ns;   /* the fork in ns since the child's start (negative) */
    unsigned profiles; /* parent profiles read (more than 1 for a chain) */
    char path[4096];   /* the parent's profile */
};

/* Reads the blocks live in the parent of child r (child_path) at the fork,
 * from the parent's profile (opt, else found as FORMAT.md says). Returns 0,
 * 1 when r is no fork child's first profile, or -1 with one line in msg (the
 * caller converts without them). out is freed with rh_inherit_free. */
RH_HIDDEN int rh_inherit_load(const struct rh_rip *r, const char *child_path, const char *opt,
                              struct rh_inherit *out, char *msg, size_t msglen);
/* Imports inh's blocks into r: stacks, the thread "inherited", r->inherit
 * (rh_merge_run starts with them live). inh must outlive the merge. Returns 0
 * or -1 (out of memory). */
RH_HIDDEN int rh_inherit_apply(struct rh_rip *r, struct rh_inherit *inh);
RH_HIDDEN void rh_inherit_free(struct rh_inherit *inh);

/* ---- rh_merge.c: time-ordered merge and block pairing -------------------- */

/* One allocations row. dealloc_ns < 0 means NULL (never freed). */
struct rh_row {
    int64_t alloc_ns, dealloc_ns;
    uint64_t id; /* allocations.id: the allocation's number in merged order, from 1 */
    uint64_t stack;
    uint64_t size, addr;
    uint32_t alloc_thread, dealloc_thread; /* 0 = NULL */
    uint32_t kind;                         /* RH_KIND_UNKNOWN when not known yet */
    uint32_t stack_index;                  /* index into rip->stacks */
    uint8_t temporary;                     /* rh_temporary_free() said so at its free */
    uint64_t raw_addr; /* the address as recorded: a pool or region block's tag kept */
};
#define RH_KIND_UNKNOWN UINT32_MAX

/* ---- rh_regions.c: the regions of region allocators ---------------------- */

struct rh_region_def {
    uint32_t pool;   /* the runtime's pool id */
    uint32_t parent; /* regions.id of the parent, 0: none */
    uint32_t kind;   /* name, 0: none */
    int64_t created; /* ns */
};

struct rh_region_block {
    uint64_t row;
    uint32_t region;
};

struct rh_regions {
    uint32_t cur[65536]; /* pool id -> regions.id (index + 1), 0: no region */
    struct rh_region_def *defs;
    size_t ndefs, capdefs;
    struct rh_region_block *blocks;
    size_t nblocks, capblocks;
    struct rh_map chunks; /* untagged address -> pool id of the live chunk, 0: none */
    uint32_t moved[256];  /* per thread (id & 255): the pool id of the chunk a
                             reallocation just freed */
    uint32_t creators[64]; /* kinds of the functions that created regions */
    size_t ncreators;
};

/* Region `pool` (a pool id) announced at t with its parent's pool id and name
 * kind (0: none); created: a new region. Returns 0 or -1 (out of memory). */
RH_HIDDEN int rh_regions_define(struct rh_rip *r, uint32_t pool, uint32_t parent_pool,
                                uint32_t kind, int created, uint32_t creator, int64_t t);
/* The address to pair for event op at addr: a pool-id-0 address (pfree,
 * repalloc) becomes the tagged address of the live region chunk there (a
 * reallocation's new chunk: the region of the chunk it replaced on that
 * thread); others are returned as they are. */
RH_HIDDEN uint64_t rh_regions_resolve(struct rh_rip *r, int op, uint64_t addr, uint32_t thread);
/* A live block opened at addr (tagged): remembered when it is a region chunk. */
RH_HIDDEN int rh_regions_opened(struct rh_rip *r, uint64_t addr);
/* The row `row` of the block at addr (tagged) is complete (closed: it was
 * freed): noted with its region when it is a region chunk. 0 or -1. */
RH_HIDDEN int rh_regions_note(struct rh_rip *r, uint64_t row, uint64_t addr, int closed);
RH_HIDDEN void rh_regions_free(struct rh_rip *r);

struct rh_merge_stats {
    uint64_t rows;
    uint64_t unknown_frees;
    uint64_t overlapping_allocs;
    uint64_t failed_allocs;
    uint64_t live_at_end;
    int64_t last_ns; /* latest event time seen */
    uint64_t inherited; /* rows 1..inherited are blocks inherited at the fork */
};

struct rh_agg;

struct rh_merge_sink {
    /* Called once per row; a non-zero return stops the merge with that rc. */
    int (*row)(void *ctx, const struct rh_row *row);
    /* Called now and then with bytes of chunks decoded so far; may be NULL. */
    void (*progress)(void *ctx, uint64_t done, uint64_t total);
    void *ctx;
    /* Aggregates fed in the same pass (rh_aggregate.c); NULL: none. */
    struct rh_agg *agg;
    /* Called once per RH_EV_EXT event with its time in ns; NULL: dropped. */
    int (*ext)(void *ctx, const struct rh_event *ev, int64_t t);
    /* Called once per CPU sample with its merged time, thread,
     * stack id and the sampling periods it stands for; may be NULL. A non-zero
     * return stops the merge with that rc. */
    int (*cpu)(void *ctx, int64_t t, uint32_t thread, uint64_t stack, uint64_t periods);
    /* Called once per allocation, in increasing id order, with its stack's
     * index and id and its size (rh_postings.c); may be NULL. Non-zero
     * stops the merge. */
    int (*alloc)(void *ctx, uint32_t stack_index, uint64_t stack, uint64_t id, uint64_t size);
    /* Called when a realloc moved block `prev` (a row id) into the new row
     * `id`, in increasing id order, before the alloc call of id; may be NULL.
     * Non-zero stops the merge. */
    int (*realloc)(void *ctx, uint64_t prev, uint64_t id);
};

/* heaptrack's temporary allocations, as its analyzer counts them: a free is
 * temporary when the event just before it, in the merged order of all
 * threads' events, is an allocation with the same size and stack. Unknown
 * frees and failed allocations are not events here; a realloc is a free then
 * an allocation. One state per merge, zero-initialized. */
struct rh_temp_state {
    int last_is_alloc;
    uint32_t stack; /* index into rip->stacks */
    uint64_t size;
};
/* An allocation of (stack, size) happened. */
static inline void rh_temporary_alloc(struct rh_temp_state *s, uint32_t stack, uint64_t size)
{
    s->last_is_alloc = 1;
    s->stack = stack;
    s->size = size;
}
/* A known block of (stack, size) is freed: returns 1 when the free is
 * temporary. */
static inline int rh_temporary_free(struct rh_temp_state *s, uint32_t stack, uint64_t size)
{
    int t = s->last_is_alloc && s->stack == stack && s->size == size;
    s->last_is_alloc = 0;
    return t;
}

/* Merges all streams of r by (time, frees before allocations), pairs frees
 * with live blocks and hands every row to sink->row, finishing with the blocks
 * still live. Memory grows with live blocks, not with events. Returns 0, -1 on
 * out-of-memory, or the sink's non-zero rc. */
RH_HIDDEN int rh_merge_run(struct rh_rip *r, const struct rh_merge_sink *sink,
                           struct rh_merge_stats *st);

/* The same merge fed one event at a time, for a reader that follows a
 * growing file (convert/live/): rh_merge_new() starts one (NULL on out of
 * memory); rh_merge_feed() applies an event (in merged order as far as the
 * caller knows it) and returns 0, -1 or the sink's rc; rh_merge_is_live()
 * says whether a block at addr is live (so the caller can hold back a free
 * whose allocation is not written yet); rh_merge_free() ends it without
 * emitting the blocks still live. */
struct rh_merge;
RH_HIDDEN struct rh_merge *rh_merge_new(struct rh_rip *r, const struct rh_merge_sink *sink,
                                        struct rh_merge_stats *st);
RH_HIDDEN int rh_merge_feed(struct rh_merge *m, const struct rh_event *ev);
RH_HIDDEN int rh_merge_is_live(struct rh_merge *m, uint64_t addr);
RH_HIDDEN void rh_merge_free(struct rh_merge *m);

/* ---- rh_aggregate.c: answers computed while merging --------------------- */

/* What the merge accumulates per stack (indexed like rip->stacks). */
struct rh_agg_stack {
    int64_t count, bytes, freed_blocks, freed_bytes, leaked_blocks, leaked_bytes;
    int64_t temporary, first_ns, last_ns;      /* first and last allocation */
    int64_t live_bytes, live_blocks;           /* running */
    int64_t peak_bytes, peak_blocks;           /* at the global peak (after rh_agg_end) */
    int64_t snap_bytes, snap_blocks;           /* lazy snapshot at the latest peak */
    int64_t col_bytes, last_end;               /* timeline: at the column's maximum, last stored */
    uint64_t epoch, col_epoch;
    uint32_t touched_col;                      /* column it last changed in, 0: none */
};

/* Per thread (threads.id - 1), the figures of the thread_summary view. */
struct rh_agg_thread {
    int64_t alloc_blocks, alloc_bytes, freed_blocks, freed_bytes;
    int64_t others_blocks, others_bytes, live_blocks, live_bytes;
};

/* One column of the heap timeline: column c (1..RH_AGG_COLUMNS) covers
 * ((c-1)/C, c/C] of the span. */
struct rh_agg_col {
    int64_t max_bytes, max_time; /* the highest live bytes reached in it, first time */
    int64_t end_bytes;           /* live bytes after its last event */
    int active;                  /* some event fell in it */
};

/* A stack's live bytes at a column's maximum and at its end, stored when
 * either differs from what the stack held before (sparse). The points go to
 * a temp file column by column and are read back one column at a time
 * (rh_agg_tl_next), so memory holds at most one column's: one per stack. */
struct rh_agg_point {
    uint32_t col, si;
    int64_t at_max, at_end;
};

struct rh_agg_hist {
    uint32_t si, cls;
    int64_t blocks, bytes; /* blocks in 1/bscale units */
};
/* One stack's rows made by one thread (threads.id, 0: none). */
struct rh_agg_sthr {
    uint32_t si, thread;
    int64_t blocks, bytes, leaked_bytes;
};

/* A never-freed row, kept until the run's length is known (leak curve). */
struct rh_agg_leak {
    uint32_t si;
    int64_t t, size; /* size: estimated bytes on a sampled profile */
    int64_t blocks;  /* in 1/bscale units */
};

struct rh_grp;

struct rh_agg {
    struct rh_rip *r;
    struct rh_grp *grp; /* the stack groups' events (rh_agg_groups.c), or NULL */
    struct rh_agg_stack *st;
    size_t nst, capst;
    struct rh_agg_thread *th;
    size_t nth, capth;
    /* live totals in merged order; the peak is checked at the end of each
     * group of events with the same time, since the rows order frees first
     * within a time */
    int64_t total, total_blocks, peak, peak_blocks, peak_t;
    uint64_t epoch;
    int64_t cur_t;
    int have_t;
    int time_ordered;
    int64_t last_alloc_t;
    /* timeline */
    int64_t span;
    int tl_ok;
    uint32_t cur_col;
    int64_t col_lo, col_hi; /* cur_col covers the times (col_lo, col_hi] */
    uint64_t col_epoch;
    struct rh_agg_col col[RH_AGG_COLUMNS + 1];
    uint32_t *touched;
    size_t ntouched, captouched;
    /* the per-column stack figures: an unlinked temp file (rh_agg_tl_open),
     * per column with points the varints col, n, then n times si,
     * zigzag at_max, zigzag at_end; columns strictly increasing */
    FILE *tlf;
    int tl_errno;         /* the first failed write's errno (0: none) */
    uint32_t tl_ncols;    /* columns written */
    uint32_t tl_nread;    /* columns read back */
    uint32_t tl_last_col; /* the last column read back */
    uint8_t *tlbuf;       /* one column's encoding, <= 30 bytes per stack */
    size_t captlbuf;
    struct rh_agg_point *pts; /* one column read back, <= one per stack */
    size_t cappts;
    /* leaks */
    struct rh_agg_leak *lk;
    size_t nlk, caplk;
    int64_t duration;
    int ended;
    int oom;
    /* CPU samples: per stack index and per thread - 1 */
    int64_t *cpu_st;
    size_t ncpu_st, capcpu_st;
    int64_t *cpu_th;
    size_t ncpu_th, capcpu_th;
    int64_t cpu_total;
    /* a call site's detail (stack_hist, stack_threads): per stack, its rows
     * by size class and lifetime class, and by allocating thread; sparse,
     * one entry per pair that occurs, found through the maps */
    struct rh_agg_hist *hist;
    size_t nhist, caphist;
    struct rh_map hist_map; /* si << 8 | class -> index into hist */
    struct rh_agg_sthr *sthr;
    size_t nsthr, capsthr;
    struct rh_map sthr_map; /* si << 32 | thread -> index into sthr */
    /* sampling: the figures above are estimates, each event weighted
     * by rh_agg_weight(); block counts are kept in units of 1/bscale block so
     * that fractional weights add up exactly (bscale 1 on a full profile) */
    int64_t bscale;
};

/* Creates the aggregates of a merge of r. span_ns: the run's length if known
 * before the merge (the trailer's end), else 0; the per-column timeline is
 * kept only when it is known and no event lies past it. NULL on out of
 * memory. */
RH_HIDDEN struct rh_agg *rh_agg_new(struct rh_rip *r, int64_t span_ns);
/* Opens the temp file that holds the timeline's per-column stack figures
 * (rh_spill_open(near, "tl"): beside the output database near, or in
 * $TMPDIR when near is NULL). Call it once after rh_agg_new(); without it a
 * timeline with points fails at the end (EBADF). Returns 0, or -1 with errno
 * set. */
RH_HIDDEN int rh_agg_tl_open(struct rh_agg *a, const char *near);
/* After rh_agg_end(), with a->tl_ok: starts reading the points back. Returns
 * 0, or -1 with errno set when a write to the temp file failed (ENOSPC on a
 * full disk) or it cannot be rewound. */
RH_HIDDEN int rh_agg_tl_rewind(struct rh_agg *a);
/* The next column's points, in the order they were stored (not by stack id),
 * into a buffer owned by a, valid until the next call: sets *pts and returns
 * their number (at least 1; every point has the same col), 0 after the last
 * column, or -1 with errno set (ENOMEM, EIO when the file is cut or damaged,
 * or the read's error). Columns come in strictly increasing order. */
RH_HIDDEN long rh_agg_tl_next(struct rh_agg *a, const struct rh_agg_point **pts);
RH_HIDDEN void rh_agg_free(struct rh_agg *a);
/* An allocation (is_alloc) or the free of a known block, of stack index si
 * and `size` bytes, at time t in merged order. Returns 0 or -1 (out of memory). */
RH_HIDDEN int rh_agg_event(struct rh_agg *a, uint32_t si, int64_t t, uint64_t size, uint64_t addr,
                           int is_alloc);
/* Sampling: the weight of a recorded block of `size` bytes at addr
 * in profile r, the inverse of the probability it had of being recorded: 1 on
 * a full profile and for pool requests (tagged addresses, never sampled), 1/r
 * by rate, 1/(1 - exp(-size/N)) by bytes (1 when size >= N and r->sample_big:
 * heapprofd's rule). The allocations view's `weight`
 * computes the same (rh_sample_weight_sql). */
RH_HIDDEN double rh_sample_weight(const struct rh_rip *r, uint64_t size, uint64_t addr);
/* One event of a block of `size` bytes at addr as a's figures count it:
 * estimated bytes, and blocks in 1/a->bscale units (rh_agg_blocks rounds
 * them). For readers that keep figures beside the aggregates (the live
 * view's threads). */
RH_HIDDEN int64_t rh_agg_est_bytes(const struct rh_agg *a, uint64_t size, uint64_t addr);
RH_HIDDEN int64_t rh_agg_est_blocks(const struct rh_agg *a, uint64_t size, uint64_t addr);
/* The SQL expression of the same weight over alloc_rows a, into buf. */
RH_HIDDEN void rh_sample_weight_sql(const struct rh_rip *r, char *buf, size_t len);
/* An aggregate's block count in units of 1/a->bscale, rounded to blocks. */
RH_HIDDEN int64_t rh_agg_blocks(const struct rh_agg *a, int64_t scaled);
/* One CPU sample of stack index si in thread (threads.id), standing for
 * `periods` sampling periods. Returns 0 or -1. */
RH_HIDDEN int rh_agg_cpu(struct rh_agg *a, uint32_t si, uint32_t thread, uint64_t periods);
/* Every row the merge emits, before the sink sees it. Returns 0 or -1. */
RH_HIDDEN int rh_agg_row(struct rh_agg *a, const struct rh_row *row);
/* The last event was merged: settles the peak and the timeline; duration_ns
 * is the run's length as meta records it. Called before the rows of blocks
 * still live, which rh_agg_row() then scores into the leak curve. */
RH_HIDDEN void rh_agg_end(struct rh_agg *a, int64_t duration_ns);
/* Stack s's bytes and blocks (1/bscale units) at the peak of a so far,
 * counting the events of the current time as rh_agg_end() will: what its
 * peak_bytes/peak_blocks hold after it, for a reader following a profile
 * (the live view). */
RH_HIDDEN void rh_agg_peak_now(const struct rh_agg *a, const struct rh_agg_stack *s, int64_t *bytes,
                               int64_t *blocks);
/* The tables the aggregates are stored in, and their rows' columns
 * (docs/sql.md): stack_stats (12), thread_stats (9), timeline (6),
 * leak_curve (6), stack_hist (4: bt, class, blocks, bytes), stack_threads
 * (5: bt, thread, blocks, bytes, leaked_bytes). timeline_stacks is read
 * with rh_agg_tl_next. */
enum rh_agg_table {
    RH_AGG_T_STACKS,
    RH_AGG_T_THREADS,
    RH_AGG_T_TIMELINE,
    RH_AGG_T_LEAKS,
    RH_AGG_T_HIST,
    RH_AGG_T_STHREADS,
    RH_AGG_T_N
};
/* Receives one row v[0..n-1] of table t (si: the stack index of a
 * stack_stats or leak_curve row). Returns 0, or -1 to stop. */
typedef int (*rh_agg_emit_fn)(void *ctx, enum rh_agg_table t, uint32_t si, const int64_t *v,
                              int n);
/* The one serialisation of the aggregates: every row of stack_stats,
 * thread_stats, timeline (when a->tl_ok), leak_curve, stack_hist and
 * stack_threads, in that order, as
 * the converter stores them (rh_db_agg.c) and the filtered pass stores a
 * scope's (rh_query_pass.c), each passed to emit. ids: the stack id of each
 * stack index (NULL: the rip's, a->r->stacks[i].id). Sorts a's leak rows.
 * Returns 0, or -1 when emit did. */
RH_HIDDEN int rh_agg_rows(struct rh_agg *a, const int64_t *ids, rh_agg_emit_fn emit, void *ctx);
/* ---- rh_agg_groups.c: the peak of each stack set one filter term selects -- */

#define RH_GRP_BUF (1 << 16)

/* One stack's rows by one thread (threads.id): thread_stats' figures. */
struct rh_grp_sthr {
    uint32_t si, thread;
    int64_t v[8]; /* alloc blocks, bytes; freed blocks, bytes (by this thread);
                     freed by others blocks, bytes; live blocks, bytes */
};

struct rh_grp {
    FILE *f;
    uint8_t *buf;
    size_t len;
    int64_t last_t;
    int broken; /* time went back, a write failed or memory ran out: no tables */
    struct rh_grp_sthr *st;
    size_t nst, capst;
    struct rh_map map; /* (si << 32 | thread) + 1 -> index into st */
};


/* Starts keeping every event of a (not on a sampled profile) in an unlinked
 * temp file beside near (rh_spill_open), for rh_grp_write. Returns 0, or -1
 * when it cannot (the profile then has no group tables). */
RH_HIDDEN int rh_grp_open(struct rh_agg *a, const char *near);
/* Called by rh_agg_event and rh_agg_row for each event and row. */
RH_HIDDEN void rh_grp_event(struct rh_grp *g, uint32_t si, int64_t t, uint64_t size, int is_alloc);
RH_HIDDEN void rh_grp_row(struct rh_grp *g, const struct rh_row *row);
RH_HIDDEN void rh_grp_free(struct rh_grp *g);
/* Writes the events still buffered to the temp file (g->broken on failure). */
RH_HIDDEN void rh_grp_flush(struct rh_grp *g);
/* The hash of a stack id; a set's hash is the sum (mod 2^64) over its ids. */
RH_HIDDEN uint64_t rh_grp_hash(int64_t id);

/* Leak-curve bucket of an allocation at t: as `rheaper leaks` computes it
 * in SQL, min(nb - 1, CAST(t * 1.0 * nb / duration AS INTEGER)). */
RH_HIDDEN int rh_leak_bucket(int64_t t, int nb, int64_t duration);

/* The run's length in ns as meta records it: the last event, or the trailer's
 * end time when later. */
RH_HIDDEN int64_t rh_run_duration(const struct rh_rip *r, int64_t last_ns);

/* ---- rh_memory.c: memory samples (the decoder; the table is rh_db.h's) - */

/* One MEMSAMPLE body, decoded (FORMAT.md "Memory samples"). */
struct rh_memsample {
    int has_rss, final, source; /* source: RIP_MEM_SRC_* (0: no allocator figures) */
    uint64_t interval_ms, rss, anon, file;
    uint64_t alloc[5]; /* system, in use, free, mmapped, releasable */
};
/* Decodes body[0, len) into ms. Returns 0, or -1 when it is damaged. */
RH_HIDDEN int rh_memory_decode(const uint8_t *body, uint32_t len, struct rh_memsample *ms);

/* ---- rh_kinds.c: names of dynamic kinds (KINDNAME records) --------------- */

/* Records the name of dynamic kind `kind` (a KINDNAME record): name[0, len).
 * Returns 0, or -1 on out-of-memory. */
RH_HIDDEN int rh_kind_define(uint32_t kind, const uint8_t *name, size_t len);
/* The name of a dynamic kind, or NULL when the file did not name it. */
RH_HIDDEN const char *rh_kind_dyn_name(uint32_t kind);


#endif
