/* rh_runtime.h: the whole of the runtime's internal interface.
 *
 * The runtime is linked statically into every profiled program. It implements
 * rh_hooks.h (what the wrap shims call) and rheaper.h (the public API) and writes
 * rip files as runtime/FORMAT.md describes. Nothing here allocates through the
 * wrapped allocator or uses stdio: memory comes from mmap, text goes out with
 * write(2).
 *
 * The runtime's own files include the header of their layer (docs/design.md,
 * "Runtime"): rh_sys.h (system calls, lock, architecture), rh_base.h (state
 * and guard, log, clock, configuration), rh_recording.h with rh_hot.h (the
 * recording core and its inline fast path) and rh_session.h (create and
 * close, API, control, privileges, origin); rh_types.h holds the types they
 * share. This header includes them all, for the tests and tools that drive
 * the runtime from outside.
 */
#ifndef RH_RUNTIME_H
#define RH_RUNTIME_H

#include "rh_hot.h"
#include "rh_session.h"

#endif
