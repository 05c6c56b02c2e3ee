/* userfam.lib.c: a small mimalloc-style allocator of the project's own, in an
 * object file apart from its callers (userfam.c), declared to rheaper-cc in
 * userfam.alloc. It serves blocks from its own mmap'd heap, never from
 * malloc, so every row the profile shows for it comes from the wrapped entry
 * points. A block has a 16-byte header holding its size; a free block goes on
 * a free list by exact size.
 *
 * It also holds the functions the allocator file declares but rheaper-cc
 * cannot wrap, each for its reason: um_static_alloc is static, and
 * um_internal_alloc is called only from um_make_internal, in this same file.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#define HEAP (64u << 20)

struct hdr {
    size_t size;
    struct hdr *next; /* on the free list */
};

static char *heap, *top;
static struct hdr *free_list;

static struct hdr *um_take(size_t n)
{
    n = (n + 15) & ~(size_t)15;
    for (struct hdr **pp = &free_list; *pp; pp = &(*pp)->next)
        if ((*pp)->size == n) {
            struct hdr *h = *pp;
            *pp = h->next;
            return h;
        }
    if (!heap) {
        heap = mmap(NULL, HEAP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (heap == MAP_FAILED)
            return NULL;
        top = heap;
    }
    if ((size_t)(heap + HEAP - top) < n + sizeof(struct hdr))
        return NULL;
    struct hdr *h = (struct hdr *)top;
    top += n + sizeof(struct hdr);
    h->size = n;
    return h;
}

void *um_malloc(size_t n)
{
    struct hdr *h = um_take(n);
    return h ? h + 1 : NULL;
}

void um_free(void *p)
{
    if (!p)
        return;
    struct hdr *h = (struct hdr *)p - 1;
    h->next = free_list;
    free_list = h;
}

/* Calls um_malloc inside this object: not a second row (and not wrapped). */
void *um_calloc(size_t count, size_t size)
{
    void *p = um_malloc(count * size);
    if (p)
        memset(p, 0, count * size);
    return p;
}

void *um_realloc(void *p, size_t n)
{
    if (!p)
        return um_malloc(n);
    struct hdr *h = (struct hdr *)p - 1;
    if (n <= h->size)
        return p;
    void *q = um_malloc(n);
    if (q) {
        memcpy(q, p, h->size);
        um_free(p);
    }
    return q;
}

size_t um_usable_size(void *p)
{
    return p ? ((struct hdr *)p - 1)->size : 0;
}

/* An arena-style pair whose first argument is not the size. */
void *arena_alloc(void *arena, size_t size)
{
    (void)arena;
    return um_malloc(size);
}

void arena_free(void *arena, void *ptr)
{
    (void)arena;
    um_free(ptr);
}

__attribute__((noinline)) static void *um_static_alloc(size_t n)
{
    return um_malloc(n);
}

__attribute__((noinline)) void *um_internal_alloc(size_t n)
{
    return um_malloc(n);
}

/* The only callers of um_static_alloc and um_internal_alloc. */
void *um_make_internal(int which, size_t n)
{
    return which ? um_static_alloc(n) : um_internal_alloc(n);
}
