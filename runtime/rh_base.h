/* rh_base.h: the runtime's base layer: state and guard, log, clock and
 * configuration (rh_state.c, rh_log.c, rh_clock.c, rh_config.c).
 *
 * Above the system layer (rh_sys.h) and below the recording core
 * (rh_recording.h): these files call only each other and the system layer
 * (docs/design.md, "Runtime"). Prototypes are grouped under the file that
 * defines them; everything is hidden.
 */
#ifndef RH_BASE_H
#define RH_BASE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "rh_hooks.h"
#include "rh_sys.h"
#include "rh_types.h"

#ifndef RH_DEBUG_LEVEL
#define RH_DEBUG_LEVEL 1
#endif

/* ---- tiered assertions (rh_log.c) ---------------------------------------
 * The runtime's invariants, checked by tier (RHEAPER_DEBUG_LEVEL, CMake):
 *   rh_assert           level >= 1, kept in release builds: cheap checks on
 *                       cold paths (a chunk opened, a file created);
 *   rh_assert_internal  level >= 2: invariants of the runtime's own data on
 *                       the hot path (a record inside its chunk);
 *   rh_assert_expensive level >= 3: checks that cost a loop or a syscall.
 * Each evaluates to 1 when the check holds (or is compiled out), else 0, so
 * a caller can stop what it was doing: `if (!rh_assert(x)) return -1;`. A
 * failure writes one line "rheaper: internal check failed: EXPR (FILE:LINE)"
 * with write(2) and, at level 1 (release), stops tracking: the runtime never
 * aborts the program it profiles. At level 2 and above (debug builds, the
 * sanitizer tests) it aborts, so a test sees the failure where it happened.
 * Never allocates. */
RH_HIDDEN void rh_assert_fail(const char *expr, const char *file, int line) RH_COLD;

#define RH_ASSERT_IMPL_(e) (rh_likely(e) ? 1 : (rh_assert_fail(#e, __FILE__, __LINE__), 0))
/* A check compiled out: true, and e is not evaluated. */
static inline int rh_assert_off_(void)
{
    return 1;
}
#if RH_DEBUG_LEVEL >= 1
#define rh_assert(e) RH_ASSERT_IMPL_(e)
#else
#define rh_assert(e) rh_assert_off_()
#endif
#if RH_DEBUG_LEVEL >= 2
#define rh_assert_internal(e) RH_ASSERT_IMPL_(e)
#else
#define rh_assert_internal(e) rh_assert_off_()
#endif
#if RH_DEBUG_LEVEL >= 3
#define rh_assert_expensive(e) RH_ASSERT_IMPL_(e)
#else
#define rh_assert_expensive(e) rh_assert_off_()
#endif

/* ---- rh_log.c ----------------------------------------------------------- */

/* Formats fmt into buf (always NUL-terminated, truncated to size). Supports
 * %s %c %d %u %x %p and %%, with the l, ll and z length modifiers. Returns the
 * length written. Allocation-free and async-signal-safe. */
RH_HIDDEN size_t rh_vfmt(char *buf, size_t size, const char *fmt, va_list ap);
RH_HIDDEN size_t rh_fmt(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A warning or error: ONE line "rheaper: <message>\n" with a single write,
 * where RHEAPER_LOG says (fd 2 by default), once per cause (fmt) and process. */
RH_HIDDEN void rh_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2), cold));
/* A notice ("wrote ..."): every time, but by default only when fd 2 is a
 * terminal (a daemon's fd 2 is its log). */
RH_HIDDEN void rh_notice(const char *fmt, ...) __attribute__((format(printf, 1, 2), cold));
/* Reads RHEAPER_LOG's value: stderr, off, or a file name template with %p %t
 * %e %%. Returns 0, or -1 when it is not one (the default stays). */
RH_HIDDEN int rh_log_configure(const char *value);
/* The log file of this process under RHEAPER_LOG=FILE, else "". */
RH_HIDDEN const char *rh_log_path(void);
/* The identity of the log file this process (or its parent) created; -1
 * when it created none. */
RH_HIDDEN int rh_log_fid_get(struct rh_fid *out);
/* Warnings left out because their cause was already written. */
RH_HIDDEN unsigned long long rh_log_repeated(void);
/* Expands a file name template into buf: %p pid, %t seconds since the epoch,
 * %e the executable's file name, %n seq, %% a '%'. Returns the length. */
RH_HIDDEN size_t rh_expand_template(char *buf, size_t size, const char *t, unsigned seq);

/* ---- rh_config.c -------------------------------------------------------- */

extern RH_HIDDEN struct rh_config rh_cfg;
#define RH_DEFAULT_STREAM_QUEUE (64ull << 20)
#define RH_MIN_STREAM_QUEUE (1ull << 20)
#define RH_DEFAULT_STREAM_TIMEOUT 10u
#define RH_MAX_CPU_HZ 10000u
#define RH_DEFAULT_RSS_MS 10u
#define RH_MAX_RSS_MS 3600000u

/* Reads RHEAPER_* with secure_getenv into rh_cfg. A bad value gets one warning
 * line and the default. Called once, from rh_init_lazy. */
RH_HIDDEN void rh_config_load_env(void);
/* Parses a decimal in [min, max]; returns 0 and stores it, or -1. */
RH_HIDDEN int rh_parse_uint(const char *s, unsigned min, unsigned max, unsigned *out);
/* Largest chunk size in bytes (header included) for the current config. */
RH_HIDDEN uint32_t rh_config_max_chunk(void);
/* Parses a signal: a number, a name with or without SIG (USR2, SIGPROF), or
 * RTMIN+n / RTMAX-n. Returns it, or -1. */
RH_HIDDEN int rh_parse_signal(const char *s);
/* The default toggle signal: SIGRTMAX-5 (docs/record.md). */
RH_HIDDEN int rh_default_signal(void);
/* RHEAPER_STREAM=HOST:PORT, parsed (numeric IPv4, [IPv6] or localhost) into
 * the collector's address by rh_config_load_env: rh_stream_on() is then 1,
 * read by every thread (rh_cfg itself is rewritten whole by rheaper_enable
 * while threads run). */
RH_HIDDEN int rh_stream_on(void);
struct sockaddr_storage;
extern RH_HIDDEN struct sockaddr_storage rh_stream_addr;
extern RH_HIDDEN unsigned rh_stream_addrlen;

/* ---- rh_clock.c --------------------------------------------------------- */

/* Picks the tick source (TSC when the CPU has an invariant one, else
 * CLOCK_MONOTONIC ns) and sets rh_clock_tsc. Idempotent. */
RH_HIDDEN void rh_clock_init(void);
/* Event time = tick >> rh_clock_shift (4 for TSC, 0 for ns). Set with
 * rh_clock_tsc, before tracking turns on. */
extern RH_HIDDEN uint32_t rh_clock_shift;
RH_HIDDEN uint32_t rh_clock_kind(void); /* RIP_CLOCK_* */
RH_HIDDEN uint64_t rh_mono_ns(void);
RH_HIDDEN uint64_t rh_real_ns(void);
/* Ticks per second, measured once with a ~1 ms spin (no sleep); 0 if unknown. */
RH_HIDDEN uint64_t rh_ticks_per_sec(void);
/* A (tick, CLOCK_MONOTONIC ns) pair taken together. */
RH_HIDDEN void rh_calib_pair(uint64_t *tick, uint64_t *ns);

/* ---- rh_state.c: the state word, the guard, the profile's shared state ---- */

extern RH_HIDDEN struct rh_profile rh_prof;
/* Bumped each time a new file is created; a writer whose chunk belongs to an
 * older epoch starts over (hot-path check, relaxed loads). */
extern RH_HIDDEN uint32_t rh_epoch;
/* Protects rh_prof, chunk reservation, mmap/munmap of chunks and slot release.
 * Lock order: rh_shared_lock before rh_prof_lock. */
extern RH_HIDDEN int rh_prof_lock;

/* Set while the runtime calls sigaction itself (rh_control.c, rh_cpu.c,
 * rh_report.c): the program's own sigaction calls are told apart. */
extern RH_HIDDEN volatile int rh_ctl_self;

/* 1 when state s is a recording: the heap's (RH_ON) or CPU samples only. */
static inline int rh_recording(int s)
{
    s = RH_STATE(s);
    return s == RH_ON || s == RH_CPUONLY;
}
/* The state a recording starts in: RH_ON (with RH_LIVE when it keeps the live
 * map), or RH_CPUONLY under RHEAPER_HEAP=0. */
/* RH_LIVE while the recording keeps the live map: set by the sampler's
 * configuration (rh_sample_configure), which runs before every start. */
extern RH_HIDDEN int rh_state_live;
static inline int rh_on_state(void)
{
    return rh_cfg.heap ? RH_ON | __atomic_load_n(&rh_state_live, __ATOMIC_RELAXED) : RH_CPUONLY;
}

/* Sets the state's RH_OFF/RH_ON part, keeping a pending RH_CTL bit. */
RH_HIDDEN void rh_state_set(int v);
/* Asks the next hooked call of any thread to run the control work (sets
 * RH_CTL). Async-signal-safe. */
RH_HIDDEN void rh_ctl_request(void);

/* The calling thread's guard, saved and set around API work. */
RH_HIDDEN int rh_guard_enter(void);
RH_HIDDEN void rh_guard_leave(int saved);

/* The one hook from the recording core up to the session layer: what the
 * core needs done there, by number. rh_session_call returns the session
 * layer's answer, 0 before it installed its function (nothing was started).
 *   RH_SES_START    the process's lazy start (rh_init_lazy): 1 when tracking
 *                   is on; a pool's or a region's first hooked call;
 *   RH_SES_FILE     create the pending profile (lazy start, rh_file_ensure):
 *                   1 when a file is open; a thread's first event;
 *   RH_SES_STOPPED  the core stopped tracking on a failure: the marker says
 *                   so when armed;
 *   RH_SES_HELPER   a thread asked for a prepared chunk: start the helper
 *                   thread if none runs in this process; called only at a
 *                   safe point (rh_spare_start_safe).
 */
enum { RH_SES_START = 1, RH_SES_FILE = 2, RH_SES_STOPPED = 3, RH_SES_HELPER = 4 };
RH_HIDDEN int rh_session_call(int what);
RH_HIDDEN void rh_session_install(int (*fn)(int what));

/* ---- rh_state.c: the runtime's own thread -------------------------------- */

/* The thread id of the runtime's own thread in this process (defined in rh_state.c;
 * rh_helper.c stores it), 0 when none: never a program thread, so it takes no place in
 * a profile's thread list nor a CPU timer. */
extern RH_HIDDEN uint32_t rh_runtime_tid;
/* rh_runtime_tid while the helper is being created and has not stored its
 * id yet: a CPU scan waits (briefly) until it has, so it never takes the
 * new thread for a program thread. Matches no thread id. */
#define RH_TID_STARTING 0xffffffffu

#endif
