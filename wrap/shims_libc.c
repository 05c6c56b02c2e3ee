/* shims_libc.c: the __wrap_ shims of libc functions that hand back memory.
 *
 * strdup, strndup, wcsdup, asprintf/vasprintf (and the _FORTIFY_SOURCE __*_chk
 * forms), getline/getdelim/__getdelim, realpath, getcwd, get_current_dir_name,
 * canonicalize_file_name, open_memstream with fclose, and dlopen/dlclose.
 *
 * In a dynamic link libc.so allocates these blocks with its own malloc. When the
 * executable defines the malloc family (wrap/interpose_malloc.c, the default
 * RHEAPER_SCOPE=process), libc's calls reach it: the shim then runs the real
 * call unguarded with a kind hint (RH_LIBC_BEGIN), and every block libc
 * allocates inside it, the result and any other (a stdio buffer getline
 * allocates), is recorded there with this shim's kind and the caller's stack.
 * Otherwise (RHEAPER_SCOPE=program) recording at this level gives the block the
 * caller's stack and lets its later free() match. In a static link libc's inner malloc calls are
 * wrapped too, but the guard held by the outer shim makes them pass through, so
 * each block is recorded once. Failures that are not about memory (ENOENT from
 * realpath, ERANGE from getcwd) record nothing; ENOMEM records a failure.
 *
 * open_memstream's buffer is only final at fclose: open_memstream remembers
 * (FILE, char **, size_t *) in a small lock-free registry and fclose records the
 * buffer. When libc's own allocations are visible (static link) the buffer has
 * already been recorded through calloc/realloc, and nothing is registered.
 *
 * Nothing here allocates or uses stdio for its own needs.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#define RH_REAL_DYN __attribute__((weak))
#include "rh_shims.h"

RH_HIDDEN __thread int rh_memstream_probe __attribute__((tls_model("local-exec")));
RH_HIDDEN __thread void *rh_tls_hint_fp __attribute__((tls_model("local-exec")));
RH_HIDDEN __thread unsigned rh_tls_hint_kind __attribute__((tls_model("local-exec")));

/* 1 when this shim's real call must run unguarded under a kind hint: the
 * executable's interposed malloc family records (dynamic link, tracking on,
 * RHEAPER_SCOPE=process), and no outer call is hooked or hinted. */
RH_INLINE int rh_libc_defer(void)
{
    return &rh_ip_linked != NULL && RH_STATE(__atomic_load_n(&rh_state, __ATOMIC_RELAXED)) == RH_ON &&
           !rh_guard && rh_scope_process && rh_tls_hint_fp == NULL && rh_ip_linked();
}

/* The start of a libc shim returning TYPE from CALL: under rh_libc_defer the
 * real call runs with the hint {KIND, this shim's frame} and the shim records
 * nothing (the interposed functions do); otherwise as rh_hook_begin, passing
 * straight through when that says no. Must be used in the shim's own body. */
#define RH_LIBC_BEGIN(KIND, TYPE, CALL)                                                            \
    do {                                                                                           \
        if (rh_unlikely(rh_libc_defer())) {                                                        \
            rh_tls_hint_kind = (KIND);                                                             \
            rh_tls_hint_fp = RH_FP();                                                              \
            rh_barrier();                                                                          \
            TYPE r_ = CALL;                                                                        \
            rh_barrier();                                                                          \
            rh_tls_hint_fp = NULL;                                                                 \
            return r_;                                                                             \
        }                                                                                          \
        if (!rh_hook_begin())                                                                      \
            return CALL;                                                                           \
    } while (0)

/* Ends a hooked call whose result is a NUL-terminated string p allocated by
 * libc: records strlen(p) + 1 bytes (or `size` when non-zero); a NULL result is
 * a failure only when errno says ENOMEM. errno stays as the call left it. */
RH_INLINE void rh_shim_str_done(unsigned kind, char *p, size_t size, void *fp)
{
    if (p != NULL) {
        if (size == 0)
            size = strlen(p) + 1;
        rh_record_alloc(kind, p, size, rh_now(), fp);
    } else if (errno == ENOMEM) {
        rh_record_fail(kind, size, fp);
    }
    rh_hook_end();
}

RH_WRAP char *__wrap_strdup(const char *s)
{
    RH_LIBC_BEGIN(RH_KIND_STRDUP, char *, __real_strdup(s));
    char *p = __real_strdup(s);
    rh_shim_alloc_done(RH_KIND_STRDUP, p, p ? strlen(p) + 1 : strlen(s) + 1, RH_FP());
    return p;
}

RH_WRAP char *__wrap_strndup(const char *s, size_t n)
{
    RH_LIBC_BEGIN(RH_KIND_STRNDUP, char *, __real_strndup(s, n));
    char *p = __real_strndup(s, n);
    rh_shim_alloc_done(RH_KIND_STRNDUP, p, p ? strlen(p) + 1 : strnlen(s, n) + 1, RH_FP());
    return p;
}

/* wcsdup: the table spells wchar_t as int (the same type on Linux). */
RH_WRAP int *__wrap_wcsdup(const int *s)
{
    RH_LIBC_BEGIN(RH_KIND_WCSDUP, int *, __real_wcsdup(s));
    int *p = __real_wcsdup(s);
    const wchar_t *w = (const wchar_t *)(p ? p : s);
    rh_shim_alloc_done(RH_KIND_WCSDUP, p, (wcslen(w) + 1) * sizeof(wchar_t), RH_FP());
    return p;
}

/* Ends a hooked asprintf-like call: rc >= 0 means *sp holds rc + 1 bytes. */
RH_INLINE void rh_asprintf_done(unsigned kind, char **sp, int rc, void *fp)
{
    if (rc >= 0) {
        rh_shim_alloc_done(kind, *sp, (size_t)rc + 1, fp);
    } else {
        if (errno == ENOMEM)
            rh_record_fail(kind, 0, fp);
        rh_hook_end();
    }
}

RH_WRAP int __wrap_vasprintf(char **sp, const char *fmt, va_list ap)
{
    RH_LIBC_BEGIN(RH_KIND_VASPRINTF, int, __real_vasprintf(sp, fmt, ap));
    int rc = __real_vasprintf(sp, fmt, ap);
    rh_asprintf_done(RH_KIND_VASPRINTF, sp, rc, RH_FP());
    return rc;
}

RH_WRAP int __wrap_asprintf(char **sp, const char *fmt, ...)
{
    va_list ap;
    int rc;
    va_start(ap, fmt);
    if (rh_unlikely(rh_libc_defer())) {
        rh_tls_hint_kind = RH_KIND_ASPRINTF;
        rh_tls_hint_fp = RH_FP();
        rh_barrier();
        rc = __real_vasprintf(sp, fmt, ap);
        rh_barrier();
        rh_tls_hint_fp = NULL;
        va_end(ap);
        return rc;
    }
    if (!rh_hook_begin()) {
        rc = __real_vasprintf(sp, fmt, ap);
        va_end(ap);
        return rc;
    }
    rc = __real_vasprintf(sp, fmt, ap);
    va_end(ap);
    rh_asprintf_done(RH_KIND_ASPRINTF, sp, rc, RH_FP());
    return rc;
}

#if defined(__GLIBC__) /* glibc only */
RH_WRAP int __wrap___vasprintf_chk(char **sp, int flag, const char *fmt, va_list ap)
{
    RH_LIBC_BEGIN(RH_KIND_VASPRINTF, int, __real___vasprintf_chk(sp, flag, fmt, ap));
    int rc = __real___vasprintf_chk(sp, flag, fmt, ap);
    rh_asprintf_done(RH_KIND_VASPRINTF, sp, rc, RH_FP());
    return rc;
}
#endif

#if defined(__GLIBC__) /* glibc only */
RH_WRAP int __wrap___asprintf_chk(char **sp, int flag, const char *fmt, ...)
{
    va_list ap;
    int rc;
    va_start(ap, fmt);
    if (rh_unlikely(rh_libc_defer())) {
        rh_tls_hint_kind = RH_KIND_ASPRINTF;
        rh_tls_hint_fp = RH_FP();
        rh_barrier();
        rc = __real___vasprintf_chk(sp, flag, fmt, ap);
        rh_barrier();
        rh_tls_hint_fp = NULL;
        va_end(ap);
        return rc;
    }
    if (!rh_hook_begin()) {
        rc = __real___vasprintf_chk(sp, flag, fmt, ap);
        va_end(ap);
        return rc;
    }
    rc = __real___vasprintf_chk(sp, flag, fmt, ap);
    va_end(ap);
    rh_asprintf_done(RH_KIND_ASPRINTF, sp, rc, RH_FP());
    return rc;
}
#endif

/* Ends a hooked getline/getdelim by comparing the caller's buffer before (old,
 * old_n) and after: NULL -> buffer is an allocation; a moved or resized buffer
 * is a realloc (t_before taken before the real call); unchanged is nothing.
 * nomem: the call itself set ENOMEM (a -1 at end of file leaves errno alone,
 * so a stale ENOMEM must not count); with no new buffer that is a failure.
 * errno stays as the call left it. */
RH_INLINE void rh_getdelim_done(unsigned kind, char *old, size_t old_n, char **lineptr, size_t *n,
                                int nomem, uint64_t t_before, void *fp)
{
    char *now = *lineptr;
    size_t now_n = *n;
    if (old == NULL && now != NULL)
        rh_record_alloc(kind, now, now_n, rh_now(), fp);
    else if (old != NULL && now != NULL && (now != old || now_n != old_n))
        rh_record_realloc(kind, old, now, now_n, t_before, rh_now(), fp);
    else if (nomem)
        rh_record_fail(kind, now_n, fp);
    rh_hook_end();
}

RH_WRAP long __wrap_getdelim(char **lineptr, size_t *n, int delim, FILE *stream)
{
    if (lineptr == NULL || n == NULL)
        return __real_getdelim(lineptr, n, delim, stream);
    RH_LIBC_BEGIN(RH_KIND_GETDELIM, long, __real_getdelim(lineptr, n, delim, stream));
    char *old = *lineptr;
    size_t old_n = *n;
    int e0 = errno;
    errno = 0;
    uint64_t t_before = rh_now();
    long r = __real_getdelim(lineptr, n, delim, stream);
    int e1 = errno;
    if (e1 == 0)
        errno = e0;
    int nomem = r < 0 && e1 == ENOMEM;
    rh_getdelim_done(RH_KIND_GETDELIM, old, old_n, lineptr, n, nomem, t_before, RH_FP());
    return r;
}

/* __getdelim: what an optimised build's inline getline() calls (glibc's
 * <bits/stdio.h>), so it is recorded as getline. */
RH_WRAP long __wrap___getdelim(char **lineptr, size_t *n, int delim, FILE *stream)
{
    if (lineptr == NULL || n == NULL)
        return __real___getdelim(lineptr, n, delim, stream);
    RH_LIBC_BEGIN(RH_KIND_GETLINE, long, __real___getdelim(lineptr, n, delim, stream));
    char *old = *lineptr;
    size_t old_n = *n;
    int e0 = errno;
    errno = 0;
    uint64_t t_before = rh_now();
    long r = __real___getdelim(lineptr, n, delim, stream);
    int e1 = errno;
    if (e1 == 0)
        errno = e0;
    int nomem = r < 0 && e1 == ENOMEM;
    rh_getdelim_done(RH_KIND_GETLINE, old, old_n, lineptr, n, nomem, t_before, RH_FP());
    return r;
}

RH_WRAP long __wrap_getline(char **lineptr, size_t *n, FILE *stream)
{
    if (lineptr == NULL || n == NULL)
        return __real_getline(lineptr, n, stream);
    RH_LIBC_BEGIN(RH_KIND_GETLINE, long, __real_getline(lineptr, n, stream));
    char *old = *lineptr;
    size_t old_n = *n;
    int e0 = errno;
    errno = 0;
    uint64_t t_before = rh_now();
    long r = __real_getline(lineptr, n, stream);
    int e1 = errno;
    if (e1 == 0)
        errno = e0;
    int nomem = r < 0 && e1 == ENOMEM;
    rh_getdelim_done(RH_KIND_GETLINE, old, old_n, lineptr, n, nomem, t_before, RH_FP());
    return r;
}

/* realpath allocates only when the caller passes no buffer. */
RH_WRAP char *__wrap_realpath(const char *path, char *resolved)
{
    if (resolved != NULL)
        return __real_realpath(path, resolved);
    RH_LIBC_BEGIN(RH_KIND_REALPATH, char *, __real_realpath(path, NULL));
    char *p = __real_realpath(path, NULL);
    rh_shim_str_done(RH_KIND_REALPATH, p, 0, RH_FP());
    return p;
}

#if defined(__GLIBC__) /* glibc only */
RH_WRAP char *__wrap___realpath_chk(const char *path, char *resolved, size_t resolvedlen)
{
    if (resolved != NULL)
        return __real___realpath_chk(path, resolved, resolvedlen);
    RH_LIBC_BEGIN(RH_KIND_REALPATH, char *, __real___realpath_chk(path, NULL, resolvedlen));
    char *p = __real___realpath_chk(path, NULL, resolvedlen);
    rh_shim_str_done(RH_KIND_REALPATH, p, 0, RH_FP());
    return p;
}
#endif

/* getcwd allocates only when buf is NULL: `size` bytes, or just enough when
 * size is 0 (glibc's documented extension). */
RH_WRAP char *__wrap_getcwd(char *buf, size_t size)
{
    if (buf != NULL)
        return __real_getcwd(buf, size);
    RH_LIBC_BEGIN(RH_KIND_GETCWD, char *, __real_getcwd(NULL, size));
    char *p = __real_getcwd(NULL, size);
    rh_shim_str_done(RH_KIND_GETCWD, p, size, RH_FP());
    return p;
}

#if defined(__GLIBC__) /* glibc only */
RH_WRAP char *__wrap___getcwd_chk(char *buf, size_t size, size_t buflen)
{
    if (buf != NULL)
        return __real___getcwd_chk(buf, size, buflen);
    RH_LIBC_BEGIN(RH_KIND_GETCWD, char *, __real___getcwd_chk(NULL, size, buflen));
    char *p = __real___getcwd_chk(NULL, size, buflen);
    rh_shim_str_done(RH_KIND_GETCWD, p, size, RH_FP());
    return p;
}
#endif

RH_WRAP char *__wrap_get_current_dir_name(void)
{
    RH_LIBC_BEGIN(RH_KIND_GET_CURRENT_DIR_NAME, char *, __real_get_current_dir_name());
    char *p = __real_get_current_dir_name();
    rh_shim_str_done(RH_KIND_GET_CURRENT_DIR_NAME, p, 0, RH_FP());
    return p;
}

#if defined(__GLIBC__) /* glibc only */
RH_WRAP char *__wrap_canonicalize_file_name(const char *path)
{
    RH_LIBC_BEGIN(RH_KIND_CANONICALIZE_FILE_NAME, char *, __real_canonicalize_file_name(path));
    char *p = __real_canonicalize_file_name(path);
    rh_shim_str_done(RH_KIND_CANONICALIZE_FILE_NAME, p, 0, RH_FP());
    return p;
}
#endif

/* ---- open_memstream registry ---------------------------------------------------- */

#define RH_MEMSTREAM_SLOTS 64
#define RH_MEMSTREAM_BUSY ((FILE *)1)

/* One open memstream. `f` is NULL (free), RH_MEMSTREAM_BUSY (being filled) or
 * the stream; ptr and size are valid once f holds the stream. */
struct rh_memstream {
    FILE *f;
    char **ptr;
    size_t *size;
};

static struct rh_memstream rh_memstreams[RH_MEMSTREAM_SLOTS];
static int rh_memstreams_used; /* slots not free; lets fclose skip the scan */

/* Remembers stream f. Lock-free: a slot is claimed with one CAS. Returns 0 when
 * all slots are taken (the stream is then simply not recorded). */
static int rh_memstream_put(FILE *f, char **ptr, size_t *size)
{
    for (int i = 0; i < RH_MEMSTREAM_SLOTS; i++) {
        struct rh_memstream *m = &rh_memstreams[i];
        FILE *expect = NULL;
        if (__atomic_load_n(&m->f, __ATOMIC_RELAXED) != NULL)
            continue;
        if (!__atomic_compare_exchange_n(&m->f, &expect, RH_MEMSTREAM_BUSY, 0, __ATOMIC_ACQUIRE,
                                         __ATOMIC_RELAXED))
            continue;
        __atomic_add_fetch(&rh_memstreams_used, 1, __ATOMIC_RELAXED);
        m->ptr = ptr;
        m->size = size;
        __atomic_store_n(&m->f, f, __ATOMIC_RELEASE);
        return 1;
    }
    return 0;
}

/* Finds and forgets stream f, copying its locations to *out. Called before the
 * real fclose, so no new stream can reuse f's address while it is registered.
 * Returns 0 when f is not a registered memstream. */
static int rh_memstream_take(FILE *f, struct rh_memstream *out)
{
    for (int i = 0; i < RH_MEMSTREAM_SLOTS; i++) {
        struct rh_memstream *m = &rh_memstreams[i];
        if (__atomic_load_n(&m->f, __ATOMIC_ACQUIRE) != f)
            continue;
        out->f = f;
        out->ptr = m->ptr;
        out->size = m->size;
        __atomic_store_n(&m->f, NULL, __ATOMIC_RELEASE);
        __atomic_sub_fetch(&rh_memstreams_used, 1, __ATOMIC_RELAXED);
        return 1;
    }
    return 0;
}

/* open_memstream: the real call runs without the guard, with rh_memstream_probe
 * set. If libc's allocations are wrapped (static link) __wrap_calloc sees the
 * probe, records the buffer itself and sets it to 2; else the stream is
 * registered and fclose records the final buffer. */
RH_WRAP FILE *__wrap_open_memstream(char **ptr, size_t *sizeloc)
{
    if (!rh_hook_begin())
        return __real_open_memstream(ptr, sizeloc);
    rh_hook_end();
    rh_memstream_probe = 1;
    FILE *f = __real_open_memstream(ptr, sizeloc);
    int seen = rh_memstream_probe == 2;
    rh_memstream_probe = 0;
    if (f != NULL && !seen && ptr != NULL && sizeloc != NULL) {
        int e = errno;
        rh_memstream_put(f, ptr, sizeloc);
        errno = e;
    } else if (f == NULL && !seen && errno == ENOMEM && rh_hook_begin()) {
        rh_shim_alloc_done(RH_KIND_OPEN_MEMSTREAM, NULL, 0, RH_FP());
    }
    return f;
}

/* fclose: for a registered memstream, the buffer left in *ptr (of *size bytes
 * plus the NUL) is recorded after the real fclose, at the caller's stack. */
RH_WRAP int __wrap_fclose(FILE *f)
{
    struct rh_memstream m;
    if (rh_likely(__atomic_load_n(&rh_memstreams_used, __ATOMIC_RELAXED) == 0) || f == NULL ||
        !rh_memstream_take(f, &m))
        return __real_fclose(f);
    int rc = __real_fclose(f);
    if (*m.ptr != NULL && rh_hook_begin())
        rh_shim_alloc_done(RH_KIND_OPEN_MEMSTREAM, *m.ptr, *m.size + 1, RH_FP());
    return rc;
}

/* ---- module changes ------------------------------------------------------------- */

/* dlopen/dlclose: the real call runs unguarded (constructors and destructors of
 * the module allocate and free like any code); afterwards the runtime re-reads
 * the module map. __real_dlopen is weak (RH_REAL_DYN): -static links do not wrap
 * these, and then nothing calls the shims. */
RH_WRAP void *__wrap_dlopen(const char *file, int mode)
{
    if (rh_unlikely(__real_dlopen == NULL))
        return NULL;
    void *h = __real_dlopen(file, mode);
    if (h != NULL && rh_hook_begin()) {
        rh_modules_changed();
        rh_hook_end();
    }
    return h;
}

RH_WRAP int __wrap_dlclose(void *h)
{
    if (rh_unlikely(__real_dlclose == NULL))
        return -1;
    int rc = __real_dlclose(h);
    if (rc == 0 && rh_hook_begin()) {
        rh_modules_changed();
        rh_hook_end();
    }
    return rc;
}
