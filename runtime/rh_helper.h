/* rh_helper.h: the runtime's helper thread (rh_helper.c), session layer.
 *
 * The helper lets armed mode (RHEAPER_ENABLE=signal) reach a process that has
 * stopped allocating: the toggle signal's handler only sets flags, and the
 * helper notices them and runs the same control work an allocation would
 * (rh_ctl_run). The rest of the runtime reaches it only through these hooks.
 */
#ifndef RH_HELPER_H
#define RH_HELPER_H

#include <stdint.h>

#include "rh_hooks.h"

/* Starts this process's helper when armed and none runs in this pid yet (a
 * fork child gets its own here, at its first control work); the helper runs
 * work (the control work behind RH_CTL, rh_ctl_run) when RH_CTL is set:
 * given here so the helper calls nothing of the file that starts it. Normal context
 * only (a hooked call's cold path with the guard set, or the constructor),
 * never a signal handler, no runtime lock held. When the thread cannot be
 * created, one line on stderr and toggles wait for an allocation as before;
 * no retry in this process. */
RH_HIDDEN void rh_helper_ensure(void (*work)(void));
/* Starts this process's helper for the recording threads' prepared chunks
 * (RHEAPER_PREFAULT) while a file is open and none runs in this pid (a fork
 * child gets its own here). Only from a safe point (RH_SES_HELPER: a
 * malloc-family call's way out, no runtime lock held); sets the guard to a
 * call for the creation, with every signal blocked meanwhile; work as for
 * rh_helper_ensure. */
RH_HIDDEN void rh_helper_ensure_chunks(void (*work)(void));
/* The exit work begins (exit, _exit, exec, daemon): the helper does no more
 * control work in this process, and this waits (bounded) until it is not in
 * the middle of some. A failed exec or daemon undoes it (rh_helper_resume). */
RH_HIDDEN void rh_helper_pause(void);
RH_HIDDEN void rh_helper_resume(void);


#endif
