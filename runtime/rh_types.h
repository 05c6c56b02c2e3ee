/* rh_types.h: the runtime's shared types.
 *
 * The structures more than one layer of the runtime reads or fills
 * (docs/design.md, "Runtime"): the configuration, the stack table and a walk's
 * result, the CFI rule, the profile file's state, a chunk stream's writer and
 * its slot. Types only: no prototypes, no data.
 */
#ifndef RH_TYPES_H
#define RH_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "rh_sys.h"
#include "rip_format.h"

/* ---- the configuration (rh_config.c) ------------------------------------ */

#define RH_DEFAULT_STACK_DEPTH 64u
#define RH_MAX_STACK_DEPTH 1024u
#define RH_DEFAULT_TRACKERS 1024u
#define RH_MAX_TRACKERS 65536u
#define RH_DEFAULT_BUFFER 32768u
#define RH_MIN_BUFFER 64u
#define RH_MAX_BUFFER (RIP_CHUNK_MAX_CAPACITY / 8u)

#define RH_ENABLE_SIGNAL 2 /* rh_config.enable: RHEAPER_ENABLE=signal */
#define RH_NAME_MAX 256     /* RHEAPER_PROFILE_NAME, bytes with the NUL */

struct rh_config {
    int enable;               /* RHEAPER_ENABLE=1, or RH_ENABLE_SIGNAL */
    int ctl_signal;           /* RHEAPER_SIGNAL: the toggle signal (armed mode) */
    uint64_t max_profile_size; /* RHEAPER_MAX_PROFILE_SIZE, bytes; 0: none */
    char profile_name[RH_NAME_MAX]; /* RHEAPER_PROFILE_NAME template; "": rip-%p */
    unsigned max_stack_depth; /* frames kept per stack, 1..1024 */
    unsigned max_trackers;    /* slots with their own chunk stream */
    unsigned buffer_size;     /* events per thread chunk (sets the largest chunk) */
    char profile_dir[RH_PATH_MAX];
    char stream[128];          /* RHEAPER_STREAM=HOST:PORT; "": local file */
    uint64_t stream_queue;     /* RHEAPER_STREAM_QUEUE: bytes of sealed chunks queued */
    unsigned stream_timeout;   /* RHEAPER_STREAM_TIMEOUT: seconds (send, exit drain) */
    unsigned cpu_hz;          /* RHEAPER_CPU_HZ: CPU samples per second of each thread's CPU
                                 time; 0: off (rh_cpu.c) */
    int cpu_signal;           /* RHEAPER_CPU_SIGNAL: the sampling signal, default SIGPROF */
    int heap;                 /* RHEAPER_HEAP: 1 (default) records the heap, 0 CPU only */
    /* Sampling (rh_sample.c): RH_SAMPLE_* mode, and its parameter */
    int sample_mode;
    uint64_t sample_threshold; /* rate mode: a block is taken when a uniform
                                  64-bit draw is below it (r * 2^64) */
    uint64_t sample_bytes;     /* bytes mode: the mean N */
    uint64_t sample_seed;      /* RHEAPER_SAMPLE_SEED, when sample_seeded */
    int sample_seeded;
    int populate;              /* RHEAPER_POPULATE=1: prefault chunks (default 0) */
    int prefault;              /* RHEAPER_PREFAULT=1: chunks made ready by the helper (default 0) */
    unsigned rss_ms;           /* RHEAPER_RSS_MS: memory sample interval, 0 off (rh_memsample.c) */
};
/* Sampling modes (rh_sample.c; rh_config.c reads them from the environment). */
enum { RH_SAMPLE_NONE = 0, RH_SAMPLE_RATE = 1, RH_SAMPLE_BYTES = 2 };

/* ---- stacks (rh_stack.c) -------------------------------------------------- */

/* Global stack table of one profile file: open addressing, lock-free inserts.
 * Entry hash 0 = empty; id 0 = being inserted (not yet published). */
struct rh_stack_entry {
    uint64_t hash;
    uint32_t id;
    uint32_t pad;
};
struct rh_stack_table {
    struct rh_stack_entry *entries;
    uint64_t mask;
    uint64_t limit;   /* 75% of the slots */
    uint64_t count;   /* inserted entries (atomic) */
    uint32_t next_id; /* atomic, from 1 */
    int warned;       /* full-table warning printed (atomic) */
    unsigned max_depth; /* the file's stack depth: set before the table is shared,
                           then read-only, so a re-enable with another depth never
                           races with threads still walking for the old file */
};

/* The result of one frame-pointer walk: hash plus what is needed to encode. */
struct rh_walk {
    uint64_t hash;
    uint32_t nframes;
    uint32_t cut;
};

/* How to find the caller of a frame, from the CFI row at its call. */
enum {
    RH_UW_FP = 1,      /* frame record at rbp (or no usable CFI): frame-pointer step */
    RH_UW_CFA_RSP = 2, /* CFA = rsp + cfa_off; return address at CFA + ra_off */
    RH_UW_CFA_RBP = 3, /* CFA = rbp + cfa_off, not the standard frame record */
    RH_UW_END = 4,     /* the return address is undefined: outermost frame */
    RH_UW_SIGNAL = 5,  /* a signal trampoline (CIE augmentation 'S'): the kernel's
                          signal frame holds the interrupted registers */
};
struct rh_unwind_rule {
    int kind;        /* RH_UW_* */
    int32_t cfa_off; /* CFA offset from rsp or rbp */
    int32_t rbp_off; /* rbp's save slot relative to the CFA; 0: rbp unchanged.
                        AArch64 RH_UW_FP: the frame record's (x29's slot) */
    int32_t ra_off;  /* the return address's slot relative to the CFA (-8 on
                        x86_64) */
};

/* ---- the profile file (rh_state.c holds it; rh_session.c, rh_file.c) ---- */

struct rh_slot;

/* The open profile file. Fields are protected by rh_prof_lock unless noted. */
struct rh_profile {
    uint64_t dev, ino;             /* identity of the file: checked at each reopen */
    int starved_warned;            /* the EMFILE warning was printed for this file */
    int open;                      /* a file is open and accepts chunks */
    int pending;                   /* create on the first event (lazy start) */
    int exit_flushed;              /* the exit flush already wrote a trailer */
    uint64_t end;                  /* file end offset: next chunk goes here */
    char path[RH_PATH_MAX];        /* full path of the current / last file */
    struct rh_stack_table *stacks; /* stack table of this file */
    struct rh_slot *slots;         /* slot array of this file */
    unsigned nslots;
    uint32_t max_chunk;          /* largest chunk size (bytes, header included) */
    uint64_t events_released;    /* events of chunks whose slot was released */
    uint64_t lost;               /* atomic: events not recorded */
    uint64_t reentered;          /* atomic: calls passed through by re-entry (rh_hooks.h) */
    int mod_early;               /* a module snapshot was taken before main */
    uint64_t mod_adds, mod_subs; /* dl_iterate_phdr counters at the last snapshot */
    uint32_t seq;                /* recordings started by this process (%n) */
    uint32_t end_reason;         /* RIP_END_*: written into the trailer */
    int limit_hit;               /* atomic: the size limit stopped tracking; the
                                    clean close is pending (RH_CTL) */
    uint64_t sample_dropped;     /* atomic: sampled blocks not recorded (map full) */
};
/* ---- writers and slots (rh_writer.c, rh_thread.c) ------------------------ */

/* The writer of one chunk stream: a slot's (owner-only) or the shared one
 * (under rh_shared_lock). */
struct rh_writer {
    struct rip_chunk_header *chunk; /* current chunk mapping, NULL when none */
    uint8_t *pos, *end;             /* write position and end of the payload */
    /* the fast path's end: end, or sooner where the writer's periodic work
     * is due (rh_writer_due: calibration, memory-sample deadline); the
     * record fast path tests only this, so that work costs no test per event */
    uint8_t *lim;
    uint64_t prev_time;             /* delta state: previous event time */
    uint64_t prev_addr;             /* delta state: previous address */
    uint64_t last_time;             /* the stream's last time (survives chunks) */
    struct rh_stack_table *stacks;  /* the stack table of chunk's file */
    uint64_t total_events;          /* events written by this stream's current owner */
    uint32_t chunk_size;            /* mapping size of chunk */
    uint32_t next_size;             /* size of the next chunk */
    uint32_t epoch;                 /* rh_epoch the chunk belongs to */
    uint32_t calib_left;            /* events until the calibration pair is refreshed */
    uint32_t slot_id;               /* RIP_SLOT_SHARED for the shared stream */
    uint32_t tid;                   /* owner tid (EVENTS) / current tid (SHARED) */
    uint32_t seq;                   /* next chunk's seq */
    uint8_t type;                   /* RIP_CHUNK_EVENTS or RIP_CHUNK_SHARED */
};

/* A slot's next chunk, made ready by the runtime's helper thread before the
 * slot's writer needs it (rh_writer.c "spare chunks"): mapped, its pages
 * supplied (MADV_POPULATE_WRITE), its header and the thread's name written,
 * so that a chunk switch costs the recording thread no system call and no
 * page fault. The owner thread asks (req NONE -> WANTED, with the rq_ fields
 * filled before), the helper takes the request (WANTED -> BUSY, under
 * rh_prof_lock), publishes the chunk (map, release) and ends it (-> NONE).
 * Whoever exchanges map to NULL owns the chunk: the owner thread, which uses
 * it when it was made for the chunk it opens next (epoch, seq, tid, size),
 * else seals it empty; the close of the file and a thread's exit seal it
 * empty; a fork child unmaps it (the parent's). */
enum { RH_SPARE_NONE = 0, RH_SPARE_WANTED = 1, RH_SPARE_BUSY = 2 };
struct rh_spare {
    void *map;      /* atomic: the prepared chunk, or NULL */
    uint32_t size;  /* its mapping size; with seq, tid, epoch: what it was made for */
    uint32_t seq, tid, epoch;
    uint32_t req;   /* atomic: RH_SPARE_* */
    uint32_t rq_size, rq_seq, rq_tid, rq_epoch;
    char rq_name[16]; /* the thread's name (not NUL-terminated when 16 long) */
};

struct rh_slot {
    struct rh_writer w;
    int in_use; /* atomic: 0 free, 1 held */
    struct rh_spare spare;
} __attribute__((aligned(RH_CACHE_LINE)));

#endif
