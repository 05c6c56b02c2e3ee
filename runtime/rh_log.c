/* rh_log.c: one-line messages and assertion failures, without stdio.
 *
 * The runtime runs inside malloc, before main and after exit, so it cannot use
 * printf: it may allocate, take stdio locks the interrupted code holds, or be the
 * very function being wrapped. This file formats a small printf subset into a
 * stack buffer and emits each message as one write(2) to fd 2, so lines from
 * several threads never interleave.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rh_runtime.h"

/* Appends one character if there is room (keeps space for the NUL). */
static void rh_put(char *buf, size_t size, size_t *n, char c)
{
    if (*n + 1 < size)
        buf[*n] = c;
    (*n)++;
}

/* Appends v in base 10 or 16. */
static void rh_put_uint(char *buf, size_t size, size_t *n, unsigned long long v, unsigned base)
{
    char tmp[24];
    int k = 0;
    do {
        unsigned d = (unsigned)(v % base);
        tmp[k++] = (char)(d < 10 ? '0' + d : 'a' + d - 10);
        v /= base;
    } while (v);
    while (k)
        rh_put(buf, size, n, tmp[--k]);
}

size_t rh_vfmt(char *buf, size_t size, const char *fmt, va_list ap)
{
    size_t n = 0;
    if (!size)
        return 0;
    for (const char *f = fmt; *f; f++) {
        if (*f != '%') {
            rh_put(buf, size, &n, *f);
            continue;
        }
        f++;
        int lng = 0, sz = 0;
        while (*f == 'l') {
            lng++;
            f++;
        }
        if (*f == 'z') {
            sz = 1;
            f++;
        }
        switch (*f) {
        case 's': {
            const char *s = va_arg(ap, const char *);
            if (!s)
                s = "(null)";
            while (*s)
                rh_put(buf, size, &n, *s++);
            break;
        }
        case 'c':
            rh_put(buf, size, &n, (char)va_arg(ap, int));
            break;
        case 'd': {
            long long v = sz         ? (long long)va_arg(ap, ssize_t)
                          : lng >= 2 ? va_arg(ap, long long)
                          : lng      ? va_arg(ap, long)
                                     : va_arg(ap, int);
            unsigned long long u = (unsigned long long)v;
            if (v < 0) {
                rh_put(buf, size, &n, '-');
                u = 0 - u;
            }
            rh_put_uint(buf, size, &n, u, 10);
            break;
        }
        case 'u':
        case 'x': {
            unsigned long long v = sz         ? va_arg(ap, size_t)
                                   : lng >= 2 ? va_arg(ap, unsigned long long)
                                   : lng      ? va_arg(ap, unsigned long)
                                              : va_arg(ap, unsigned);
            rh_put_uint(buf, size, &n, v, *f == 'u' ? 10 : 16);
            break;
        }
        case 'p':
            rh_put(buf, size, &n, '0');
            rh_put(buf, size, &n, 'x');
            rh_put_uint(buf, size, &n, (uintptr_t)va_arg(ap, void *), 16);
            break;
        case '%':
            rh_put(buf, size, &n, '%');
            break;
        case '\0':
            f--;
            break;
        default:
            rh_put(buf, size, &n, '?');
            break;
        }
    }
    buf[n < size ? n : size - 1] = '\0';
    return n < size ? n : size - 1;
}

size_t rh_fmt(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t n = rh_vfmt(buf, size, fmt, ap);
    va_end(ap);
    return n;
}

/* Writes all of buf to fd, retrying on EINTR and short writes; gives up
 * silently on any other error (there is nowhere left to report it). */
static void rh_write_all(int fd, const char *buf, size_t len)
{
    while (len) {
        /* raw: glibc's write is a cancellation point */
        ssize_t w = (ssize_t)syscall(SYS_write, fd, buf, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        buf += w;
        len -= (size_t)w;
    }
}

void rh_warn(const char *fmt, ...)
{
    int saved_errno = errno;
    char buf[1024];
    static const char prefix[] = "rheaper: ";
    memcpy(buf, prefix, sizeof prefix - 1);
    va_list ap;
    va_start(ap, fmt);
    size_t n = sizeof prefix - 1;
    n += rh_vfmt(buf + n, sizeof buf - n - 1, fmt, ap);
    va_end(ap);
    buf[n++] = '\n';
    rh_write_all(2, buf, n);
    errno = saved_errno;
}

void rh_assert_fail(const char *expr, const char *file, int line)
{
    char buf[512];
    size_t n = rh_fmt(buf, sizeof buf - 1, "rheaper: internal assertion failed: %s (%s:%d)", expr,
                      file, line);
    buf[n++] = '\n';
    rh_write_all(2, buf, n);
    abort();
}
