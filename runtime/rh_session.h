/* rh_session.h: the runtime's session layer.
 *
 * When a recording starts and ends and what surrounds it: the profile file's
 * creation and close and fork (rh_session.c), the public API, the lazy start
 * and the exit work (rh_api.c), armed mode's control (rh_control.c), the
 * start command line and the fork origin (rh_origin.c), and privilege changes
 * (rh_priv.c). The top of the runtime (docs/design.md, "Runtime"): it calls
 * every layer below; none calls it, except the wrap layer's shims and
 * through rh_session_call. Prototypes are grouped under the file that defines
 * them; everything is hidden.
 */
#ifndef RH_SESSION_H
#define RH_SESSION_H

#include "rh_recording.h"

/* ---- rh_session.c: the file's creation and close, fork ------------------- */

/* Creates dir/rip-<pid>[.N], writes the header, maps a fresh slot array and
 * stack table, bumps rh_epoch. Caller holds rh_prof_lock. Returns RHEAPER_OK or
 * RHEAPER_ERR_FILE / RHEAPER_ERR_NOMEM (one warning line already printed). */
RH_HIDDEN int rh_file_create_locked(void);
/* Writes the trailer, prints "rheaper: wrote ...". close_fd: disable (close the
 * file) rather than the exit flush (keep it open for later events). Caller holds
 * rh_shared_lock and rh_prof_lock, and has already sealed its own chunks. */
RH_HIDDEN void rh_file_close_locked(int close_fd);
/* Fork child: forget the parent's file without touching it. */
RH_HIDDEN void rh_file_forget_in_child(void);

/* Registers the fork handlers (prepare, parent, child). Once, at init. */
RH_HIDDEN void rh_fork_init(void);

/* ---- rh_api.c: public API, lazy start, exit work ------------------------- */

/* Closes the current recording as rheaper_disable does, with end reason
 * `reason` (RIP_END_*) in its trailer. Caller has the guard set and holds no
 * runtime lock. */
RH_HIDDEN void rh_stop_clean(uint32_t reason);
/* The exit work of the last exit handler (trailer, stream drain, marker), for
 * an exit that runs none (_exit, _Exit, daemon(3)'s parent, exec): once per
 * process, and not at all in a vfork child (whose memory is its parent's) or
 * when this thread is inside the runtime or a hooked call (a signal handler
 * that interrupted one: the locks may be this thread's). mem_final 0 skips
 * the final memory sample, which asks the allocator (async-signal contexts).
 * Keeps errno. mem_final RH_EXIT_EXEC: an exec (no final sample, and the
 * trailer's end reason says exec: the pid goes on as a new image). */
#define RH_EXIT_EXEC 2
RH_HIDDEN void rh_exit_now(int mem_final);
/* After an exec or daemon that failed and returned: the exit work rh_exit_now
 * did is done again at the process's real exit. Keeps errno. */
RH_HIDDEN void rh_exit_undo(void);
/* The fork child's side of rh_exit_now: this memory is now the child's (and
 * rh_ctl_lock free). */
RH_HIDDEN void rh_exit_fork_child(void);
/* Fork prepare (take 1) and parent (take 0): rh_ctl_lock, first in the lock
 * order, so no start or stop is half done in the child (a transient fd such
 * as the marker's temporary file). */
RH_HIDDEN void rh_ctl_fork_lock(int take);
/* Serialises every start and stop (rh_control.c). */
extern RH_HIDDEN int rh_ctl_lock;
/* rh_ctl_lock tried once (1: taken; release it with rh_ctl_lock_release),
 * for callers that must not wait for the control work. */
RH_HIDDEN int rh_ctl_lock_try(void);
RH_HIDDEN void rh_ctl_lock_release(void);

/* Fork prepare (rh_session.c): a recording whose file is still pending (the
 * lazy start: a daemon's master that has not allocated since its own fork)
 * creates it now, so the child can name its parent's profile. Caller holds
 * rh_prof_lock. Returns 1 when it created one; then the parent calls
 * rh_file_created_after_fork with no lock held. */
RH_HIDDEN int rh_file_create_for_fork_locked(void);
RH_HIDDEN void rh_file_created_after_fork(void);
/* Creates the file if it is pending (lazy start). Takes rh_prof_lock. Returns 1
 * when a file is open. */
RH_HIDDEN int rh_file_ensure(void) RH_COLD;

/* The rate `rheaper record -p PID --cpu-hz N` asked for in
 * DIR/rheaper-PID.cpu-hz (removed once read), or 0. Taken only from a regular
 * file with one link of the effective user or root that names this pid and
 * start time; 1 to RH_MAX_CPU_HZ. Armed mode, at a toggle. */
RH_HIDDEN unsigned rh_cpu_requested_hz(void);
/* ---- rh_control.c: armed mode (RHEAPER_ENABLE=signal) --------------------- */

/* Installs the toggle signal's handler (unless the program already owns the
 * signal) and writes the marker. Called once from rh_init_lazy. */
RH_HIDDEN void rh_ctl_arm(void);
/* 1 when armed (the handler is ours and the program has not taken it over). */
RH_HIDDEN int rh_ctl_armed(void);
/* 1 while the toggle handler is ours, not merely standing aside. */
RH_HIDDEN int rh_ctl_signal_armed(void);
/* Toggles requested by the signal and not yet done; takes them (returns the
 * count, sets it to 0). */
RH_HIDDEN unsigned rh_ctl_take_toggles(void);
/* Rewrites the marker file (state, current profile). Cold; no lock needed
 * beyond the caller's. */
RH_HIDDEN void rh_ctl_marker_update(void);
/* Removes the marker this process wrote (exit); a file another user put at
 * its name is left alone. */
RH_HIDDEN void rh_ctl_marker_remove(void);
/* Fork child: the child is armed too but has no marker until its next hooked
 * call writes one. */
RH_HIDDEN void rh_ctl_fork_child(void);
/* A start the toggle signal asked for failed (rh_enable_ctl's warning says
 * why): counted in the marker ("failed N"), so `rheaper record` reports it
 * instead of waiting; the toggle is spent. Caller holds rh_ctl_lock. */
RH_HIDDEN void rh_ctl_start_failed(void);

/* The marker's path ("" before the process armed or wrote one). */
RH_HIDDEN const char *rh_ctl_marker_path(void);
/* The identity of the marker this process wrote last; -1 when none. */
RH_HIDDEN int rh_ctl_marker_fid(struct rh_fid *out);
/* This process's start time (/proc/self/stat field 22), as the marker says. */
RH_HIDDEN unsigned long long rh_ctl_start_time(void);

/* ---- rh_origin.c: the start command line, the fork origin, the title ------ */

/* Reads the command line at start (once; from rh_init_lazy). */
RH_HIDDEN void rh_origin_init(void);
/* Fork handlers (rh_session.c): prepare saves the forking pid; the child,
 * before its profile state is reset, notes the parent's profile and the
 * fork's time when parent_recorded; _done drops it if the child will not
 * record from its start. */
RH_HIDDEN void rh_origin_fork_prepare(void);
RH_HIDDEN void rh_origin_fork_child(int parent_recorded);
RH_HIDDEN void rh_origin_fork_child_done(void);
/* The process changed its credentials (rh_priv.c): said in the trailer. */
RH_HIDDEN void rh_origin_credentials(void);
/* Writes the command line at start and, for a fork child's first profile,
 * the origin block into the 4096-byte header; ors RIP_HDR_F_* into *flags.
 * Returns the command line's length. */
RH_HIDDEN uint32_t rh_origin_header(uint8_t *hdr, uint32_t *flags);
/* Writes the title block (trailer bytes 112..) into t, which has
 * RIP_TRAILER_SIZE bytes. Returns the trailer's length. */
RH_HIDDEN uint32_t rh_origin_trailer(uint8_t *t);

/* ---- rh_priv.c: privilege changes and chroot (docs/servers.md) ----------- */

/* "Leave this id unchanged" for rh_priv_change (the set*id functions' -1). */
#define RH_ID_KEEP 0xffffffffu
/* Before the program changes its credentials to file-system user uid and
 * group gid (RH_ID_KEEP: unchanged): creates a pending profile now and hands
 * the profile, the marker and the log file to the new ids. If the profile
 * cannot be handed over, closes the recording cleanly with one line. Takes
 * the runtime's locks itself; keeps errno. Returns 0, or -1 when the
 * recording was closed. */
RH_HIDDEN int rh_priv_change(unsigned uid, unsigned gid);
/* Before chroot(dir): closes a recording cleanly with one line (the profile
 * path means nothing inside the new root). Keeps errno. */
RH_HIDDEN void rh_priv_chroot(const char *dir);

#endif
