/* rheaper.h: the public C API of the rheaper runtime.
 *
 * A program built with rheaper-cc has the runtime linked in. Tracking starts by
 * itself when RHEAPER_ENABLE=1 is set at startup; these calls let a program turn
 * it on and off around the part it wants to profile. Every call is safe from any
 * thread; none of them allocates through the wrapped allocator.
 */
#ifndef RHEAPER_H
#define RHEAPER_H

#ifdef __cplusplus
extern "C" {
#endif

/* Mirrors rheaper's TrackerConfig. A zero field (NULL for profile_dir) means:
 * the matching RHEAPER_* environment variable, else the default. */
struct rheaper_config {
    unsigned max_stack_depth;           /* frames kept per stack; default 64 */
    unsigned max_trackers;              /* threads with their own buffer; default 1024 */
    unsigned tracker_event_buffer_size; /* events buffered per thread; default 32768 */
    const char *profile_dir;            /* where rip-<pid> goes; default "." */
};

enum {
    RHEAPER_OK = 0,
    RHEAPER_ERR_ALREADY = -1, /* tracking is already on */
    RHEAPER_ERR_DIR = -2,     /* profile directory missing or not writable */
    RHEAPER_ERR_FILE = -3,    /* the profile file could not be created */
    RHEAPER_ERR_NOMEM = -4,   /* the runtime could not map its own memory */
    RHEAPER_ERR_NOT_ENABLED = -5, /* rheaper_disable while off */
};

/* Starts tracking into a new profile file. cfg may be NULL. Returns RHEAPER_OK
 * or one of the errors above; on error nothing is tracked. */
int rheaper_enable(const struct rheaper_config *cfg);

/* Stops tracking, writes everything out and closes the profile (the trailer is
 * written and "rheaper: wrote ..." is printed on stderr). Returns RHEAPER_OK, or
 * RHEAPER_ERR_NOT_ENABLED. Enabling again starts a new file. */
int rheaper_disable(void);

/* 1 while tracking is on, else 0. */
int rheaper_is_enabled(void);

/* Path of the current profile, or of the last one closed; "" when there has
 * been none. The string stays valid until the next rheaper_enable. */
const char *rheaper_profile_path(void);

/* A static, human-readable description of an error code. */
const char *rheaper_strerror(int rc);

#ifdef __cplusplus
}
#endif
#endif
