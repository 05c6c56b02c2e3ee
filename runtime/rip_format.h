/* rip_format.h: the records of a rip file, in C.
 *
 * runtime/FORMAT.md is the prose description of the same format; the two must
 * agree. The runtime writes these records from inside the profiled program and
 * rheaper-convert reads them afterwards, so everything here is plain data and
 * static inline helpers that neither allocate nor touch stdio.
 */
#ifndef RIP_FORMAT_H
#define RIP_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define RIP_MAGIC "RHEAPRIP"
#define RIP_VERSION 3u
/* Oldest version a reader accepts (v2 appended a trailer field and added
 * records). */
#define RIP_VERSION_MIN 1u
#define RIP_HEADER_SIZE 4096u
#define RIP_ALIGN 4096u

/* ---- file header (FORMAT.md "File header") ---- */
#define RIP_HDR_EXE_OFF 128u
#define RIP_HDR_EXE_MAX 1024u
#define RIP_HDR_CMD_OFF 1152u
#define RIP_HDR_CMD_MAX 2944u

#define RIP_CLOCK_MONO 0u
#define RIP_CLOCK_TSC 1u

#define RIP_HDR_F_CMD_TRUNCATED 1u
/* Version 3 (FORMAT.md "CPU samples"): bit 3 of the
 * header flags says CPU sampling was configured; header bytes 104..111 hold
 * u32 cpu_hz and u32 the sampling signal. */
#define RIP_HDR_F_CPU 8u
#define RIP_HDR_CPU_HZ_OFF 104u
#define RIP_HDR_CPU_SIG_OFF 108u
/* Version 3 (FORMAT.md "Sampling"): the profile
 * is sampled; u32 mode at 88 (1 rate, 2 bytes), u32 seeded at 92, u64
 * parameter at 96 (rate: the threshold r * 2^64; bytes: the mean N). */
#define RIP_HDR_F_SAMPLED 2u
#define RIP_HDR_SAMPLE_MODE_OFF 88u
#define RIP_HDR_SAMPLE_PARAM_OFF 96u
#define RIP_SAMPLE_RATE 1u
#define RIP_SAMPLE_BYTES 2u
/* bytes mode with heapprofd's rule: blocks of N bytes or more always
 * recorded, weight 1 (FORMAT.md, same subsection) */
#define RIP_SAMPLE_BYTES_BIG 3u

struct rip_file_header {
    char magic[8];
    uint32_t version;
    uint32_t header_size;
    uint32_t pid;
    uint32_t ppid;
    uint64_t start_realtime_ns;
    uint64_t start_mono_ns;
    uint64_t start_tick;
    uint32_t clock_kind;
    uint32_t tick_shift;
    uint32_t max_stack_depth;
    uint32_t chunk_size;
    uint32_t exe_len;
    uint32_t cmd_len;
    uint32_t crc;
    uint32_t flags;
    uint64_t ticks_per_sec;
    uint8_t reserved[40];
    /* offset 128: exe path, offset 1152: cmdline; see RIP_HDR_*_OFF */
};
_Static_assert(sizeof(struct rip_file_header) == 128, "file header prefix");

/* ---- chunks (FORMAT.md "Chunk header") ---- */
#define RIP_CHUNK_MAGIC 0x4b434852u /* "RHCK" */
#define RIP_CHUNK_HDR_SIZE 64u
#define RIP_CHUNK_MAX_CAPACITY (64u << 20)

enum rip_chunk_type {
    RIP_CHUNK_EVENTS = 1,
    RIP_CHUNK_SHARED = 2,
    RIP_CHUNK_MODULES = 3,
    RIP_CHUNK_TRAILER = 4,
};

#define RIP_CHUNK_F_SEALED 1u
/* On the stream's wire only (version 2, FORMAT.md "Streaming"): a partial
 * chunk, `reserved` the payload offset of its first byte. Never in a file. */
#define RIP_CHUNK_F_PART 0x80u
/* Trailer: the payload of version 1 (events .. reserved), 48 bytes; later
 * fields follow it (FORMAT.md "TRAILER payload"). */
#define RIP_TRAILER_V1_SIZE 48u
/* Trailer (v2): u32 end_reason at payload offset 56, u32 reserved at
 * 60, after the reentered count. FORMAT.md "Why the recording ended". */
#define RIP_TRAILER_END_REASON_OFF 56u
#define RIP_END_NORMAL 0u     /* disable, exit, or the toggle signal */
#define RIP_END_SIZE_LIMIT 1u /* RHEAPER_MAX_PROFILE_SIZE reached */
/* FORMAT.md "Servers": the recording was closed before a change
 * the runtime cannot follow. */
#define RIP_END_CHROOT 2u      /* the program called chroot */
#define RIP_END_CREDENTIALS 3u /* a privilege change the file could not follow */
#define RIP_END_EXEC 4u        /* the program called execve: the pid goes on as a new image */
/* Trailer (v3): u64 CPU samples written at payload offset 80, u64
 * samples dropped (the thread was inside the runtime, or had no room) at 88. */
#define RIP_TRAILER_CPU_OFF 80u
#define RIP_TRAILER_V3_CPU_SIZE 96u
/* Trailer (v3): u64 sample_dropped at 64, u64 sample_peak_live at 72. */
#define RIP_TRAILER_SAMPLE_OFF 64u
#define RIP_SLOT_SHARED 0xffffffffu
/* Trailer payload bytes this runtime writes at most (v3: every section's fields
 * up to 112, a field not set is zero; then the servers' title block, whose
 * length varies: see RIP_TRAILER_TITLE_OFF). */
#define RIP_TRAILER_SIZE (136u + RIP_TRAILER_TITLE_MAX) /* the most: title at 136.. */

/* ---- servers (v3; FORMAT.md "Servers") ---- */
/* Header flag bit 5: the profile is a fork child's first, started with its
 * parent's heap. Header bytes 3584..4095 then hold the origin block (and the
 * command line is at most 2432 bytes): u32 parent pid, u32 length of the
 * parent's profile path, u64 CLOCK_MONOTONIC ns of the fork, u64 the fork's
 * tick, then the path (at most 488 bytes). */
#define RIP_HDR_F_ORIGIN (1u << 5)
#define RIP_HDR_ORIGIN_OFF 3584u
#define RIP_HDR_ORIGIN_PATH_MAX 488u
#define RIP_HDR_CMD_MAX_ORIGIN (RIP_HDR_ORIGIN_OFF - RIP_HDR_CMD_OFF)
/* Trailer bytes 112..: u32 title length, u32 flags (RIP_TR_F_*), the
 * process name (/proc/self/comm, 16 bytes, NUL-padded), then the process
 * title (/proc/self/cmdline at the end: what ps shows, NUL-separated) of the
 * given length, at most RIP_TRAILER_TITLE_MAX. A reader takes them when the
 * trailer's used is at least 136. */
#define RIP_TRAILER_TITLE_OFF 112u
#define RIP_TRAILER_TITLE_MAX 1024u
#define RIP_TR_F_CREDENTIALS 1u /* the process changed its user or group */

/* ---- streaming (v3; FORMAT.md "Streaming") ---- */
#define RIP_HDR_F_STREAMED (1u << 4) /* written by rheaper collect from a stream */
#define RIP_HDR_PEER_OFF 112u        /* 16 bytes: the sender's IPv6 (or v4-mapped) address */
#define RIP_TRAILER_STREAM_OFF 96u   /* u32 stream state, u32 reserved, u64 queue peak */
#define RIP_STREAM_LOCAL 0u          /* not streamed */
#define RIP_STREAM_SENT 1u           /* streamed */
#define RIP_STREAM_QUEUE_FULL 2u     /* streamed; stopped when the queue was full */
#define RIP_STREAM_MAGIC "RHSTREAM"  /* hello: magic, u32 wire version, u32 zero */
#define RIP_STREAM_HELLO_SIZE 16u
#define RIP_STREAM_WIRE_VERSION 2u /* 2: partial chunks (RIP_CHUNK_F_PART) */
#define RIP_STREAM_WIRE_VERSION_MIN 1u
#define RIP_STREAM_ACK_MAGIC "RHSTDONE" /* ack: magic, u64 bytes received */
#define RIP_STREAM_ACK_SIZE 16u

struct rip_chunk_header {
    uint32_t magic;
    uint8_t type;
    uint8_t flags;
    uint16_t header_size;
    uint32_t capacity;
    uint32_t used;
    uint32_t crc;
    uint32_t slot;
    uint32_t tid;
    uint32_t seq;
    uint64_t base_time;
    uint64_t calib_tick;
    uint64_t calib_ns;
    uint32_t events;
    uint32_t reserved;
};
_Static_assert(sizeof(struct rip_chunk_header) == RIP_CHUNK_HDR_SIZE, "chunk header");

/* ---- event records (FORMAT.md "Event records") ---- */
enum rip_op {
    RIP_OP_INVALID = 0,
    RIP_OP_ALLOC = 1,
    RIP_OP_FREE = 2,
    RIP_OP_REALLOC = 3,
    RIP_OP_FAIL = 4,
    RIP_OP_STACK = 5,
    RIP_OP_EXT = 6,
};

#define RIP_B0_OP_MASK 0x07u
#define RIP_B0_RAWADDR 0x08u
#define RIP_B0_DT_SHIFT 4
#define RIP_B0_DT_VARINT 15u

enum rip_ext {
    RIP_EXT_THREADNAME = 1,
    RIP_EXT_SETTHREAD = 2,
    /* version 2, FORMAT.md "Allocator families and pools" (3..6 reserved there) */
    RIP_EXT_KINDNAME = 3,  /* varint kind, then the kind's name */
    RIP_EXT_POOLRESET = 4, /* timed: varint pool id; frees every block of the pool */
    RIP_EXT_REGION = 5,    /* timed: varint region (pool) id, parent id, name kind */
    /* version 3, FORMAT.md "mmap and mallopt": timed,
     * bytes = varint stack id (kind 200..203), then the call's varints */
    RIP_EXT_MMAP = 10,    /* addr hint, length, prot, flags, zigzag fd, offset, result, errno */
    RIP_EXT_MUNMAP = 11,  /* addr, length, errno */
    RIP_EXT_MREMAP = 12,  /* old addr, old length, new length, flags, new addr, errno */
    RIP_EXT_MALLOPT = 13, /* zigzag param, zigzag value, zigzag result */
    /* version 3, CPU sampling (14..16 reserved there) */
    RIP_EXT_CPUSAMPLE = 14, /* timed: varint stack id (kind 255) of one CPU sample */
    /* version 3, FORMAT.md "Memory samples" (30..39 reserved there) */
    RIP_EXT_MEMSAMPLE = 30, /* timed: flags, interval ms, rss, anon, file[, allocator's 5] */
};
/* Header flag bit 6: the writer samples the process's memory (EXT 30). */
#define RIP_HDR_F_MEMORY (1u << 6)
/* MEMSAMPLE flags: bit 0 the recording's last sample, bit 1 RSS unreadable,
 * bits 2..4 the source of the allocator's figures (absent when NONE). */
#define RIP_MEM_F_FINAL 1u
#define RIP_MEM_F_NO_RSS 2u
#define RIP_MEM_SRC_SHIFT 2
#define RIP_MEM_SRC_MASK 7u
#define RIP_MEM_SRC_NONE 0
#define RIP_MEM_SRC_GLIBC 1
#define RIP_MEM_SRC_JEMALLOC 2
/* Header flag bit 2 (offset 76): the file may hold EXT 10..13 records. */
#define RIP_HDR_F_MMAPS 4u

/* Kinds from RIP_DYN_KIND_BASE up are named in the file by KINDNAME records
 * (a pool's name, a function of the user's allocator file); below it they are
 * the numbers of wrap/wrap_table.txt. */
#define RIP_DYN_KIND_BASE 256u
/* The kind of a CPU sample's stack. */
#define RIP_KIND_CPU 255u
/* The first kind of the mmap family (mmap, munmap, mremap, mallopt: 200..203,
 * EXT records); the kinds below it, from 1, are allocating calls. */
#define RIP_KIND_MMAP_FIRST 200u
#define RIP_DYN_KIND_MAX 4096u /* dynamic kinds a process can name */
#define RIP_MAX_KIND_NAME 256u

/* Addresses of pool blocks (client requests) carry a tag: bit 63 set and the
 * pool id (1..65535) in bits 47..62, above every x86-64 user address, so they
 * never pair with the allocator's blocks that contain them. */
#define RIP_POOL_TAG_SHIFT 47
#define RIP_POOL_ADDR_MASK ((1ull << RIP_POOL_TAG_SHIFT) - 1)
#define RIP_POOL_TAG(id) ((1ull << 63) | ((uint64_t)(id) << RIP_POOL_TAG_SHIFT))
#define RIP_IS_POOL_ADDR(a) (((a) >> 63) != 0)
#define RIP_POOL_OF(a) ((uint32_t)(((a) >> RIP_POOL_TAG_SHIFT) & 0xffffu))
/* A region chunk whose region the writer does not know (pfree(p), repalloc's
 * result): pool id 0. The reader finds the region from the live chunk at that
 * address (FORMAT.md "Regions"). */
#define RIP_REGION_ANY_TAG RIP_POOL_TAG(0)

/* Reader limits (FORMAT.md "Limits a reader enforces"). */
#define RIP_MAX_FRAMES 1024u
#define RIP_MAX_EXT_LEN 4096u
#define RIP_MAX_MODULES 65536u
#define RIP_MAX_PATH 4096u

/* Largest encoding of one event record, stack records excluded: byte 0, two
 * time varints, stack, size and two addresses. */
#define RIP_MAX_EVENT_BYTES (1 + 6 * 10)

/* ---- varints ---- */

/* Writes v as LEB128 at p; returns the byte after it. p must have 10 bytes. */
static inline uint8_t *rip_put_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static inline uint64_t rip_zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t rip_unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Reads a LEB128 varint from [*p, end). On success stores it in *out, advances
 * *p and returns 0. Returns -1, leaving *p unchanged, when the varint runs past
 * end or is longer than 10 bytes (damage). */
static inline int rip_get_varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
    const uint8_t *q = *p;
    uint64_t v = 0;
    unsigned shift = 0;
    while (q < end) {
        uint8_t b = *q++;
        if (shift == 63 && (b & 0x7e))
            return -1;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            *p = q;
            return 0;
        }
        shift += 7;
        if (shift > 63)
            return -1;
    }
    return -1;
}

/* ---- checksum (runtime/rip_crc.c) ---- */

/* crc32c (Castagnoli) of buf[0,len), continuing from crc (0 to start).
 * Async-signal-safe, no allocation. */
uint32_t rip_crc32c(uint32_t crc, const void *buf, size_t len);

/* crc32c of a chunk as FORMAT.md defines it: the header with crc = 0, then
 * payload[0, h->used). The caller guarantees the payload is readable. */
uint32_t rip_chunk_crc(const struct rip_chunk_header *h, const uint8_t *payload);

#endif
