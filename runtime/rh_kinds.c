/* rh_kinds.c: named kinds, the dynamic kinds of pools, regions and the
 * user's allocator families.
 *
 * Kinds below RIP_DYN_KIND_BASE are the wrap table's. A pool's blocks, a
 * region's and the functions of a family declared in the user's allocator
 * file (rheaper-cc --rheaper-allocator=FILE) get "dynamic" kinds: a number
 * from RIP_DYN_KIND_BASE up per distinct name, interned here under one spin
 * lock (no allocation: names are kept by pointer, or copied into a fixed
 * buffer), and named in each profile by one EXT KINDNAME record written
 * before the first STACK record that uses it (FORMAT.md "Allocator families
 * and pools"). Below the record path (rh_record.c announces a kind before its
 * stack), above the writer.
 */
#include <string.h>

#include "rh_hot.h"

#define RH_KIND_HASH_SIZE (2 * RIP_DYN_KIND_MAX) /* power of two */

static const char *rh_dyn_names[RIP_DYN_KIND_MAX];
static uint16_t rh_dyn_hash[RH_KIND_HASH_SIZE]; /* index + 1, 0: empty */
static uint32_t rh_dyn_count;
static uint32_t rh_dyn_epoch[RIP_DYN_KIND_MAX]; /* rh_epoch + 1 of the file that has the name */
static int rh_dyn_lock;

static uint32_t rh_name_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

uint32_t rh_kind_intern(const char *name)
{
    if (!name || !*name)
        name = "pool";
    uint32_t h = rh_name_hash(name), kind = 0;
    rh_spin_lock(&rh_dyn_lock);
    for (uint32_t i = h & (RH_KIND_HASH_SIZE - 1);; i = (i + 1) & (RH_KIND_HASH_SIZE - 1)) {
        uint32_t e = rh_dyn_hash[i];
        if (e == 0) {
            if (rh_dyn_count < RIP_DYN_KIND_MAX) {
                rh_dyn_names[rh_dyn_count] = name;
                rh_dyn_hash[i] = (uint16_t)(rh_dyn_count + 1);
                kind = RIP_DYN_KIND_BASE + rh_dyn_count++;
            }
            break;
        }
        if (strcmp(rh_dyn_names[e - 1], name) == 0) {
            kind = RIP_DYN_KIND_BASE + e - 1;
            break;
        }
    }
    rh_spin_unlock(&rh_dyn_lock);
    return kind;
}

/* Names given by the program at run time (a region's name) are copied here,
 * so the kind outlives the program's string. Full: the name "region". */
static char rh_dyn_copies[65536];
static size_t rh_dyn_copied;

uint32_t rh_kind_intern_copy(const char *name)
{
    if (!name || !*name)
        return rh_kind_intern("region");
    size_t n = strnlen(name, RIP_MAX_KIND_NAME - 1);
    char tmp[RIP_MAX_KIND_NAME];
    memcpy(tmp, name, n);
    tmp[n] = 0;
    /* a name already known keeps its kind without a copy */
    uint32_t h = rh_name_hash(tmp);
    rh_spin_lock(&rh_dyn_lock);
    for (uint32_t i = h & (RH_KIND_HASH_SIZE - 1);; i = (i + 1) & (RH_KIND_HASH_SIZE - 1)) {
        uint32_t e = rh_dyn_hash[i];
        if (e == 0)
            break;
        if (strcmp(rh_dyn_names[e - 1], tmp) == 0) {
            rh_spin_unlock(&rh_dyn_lock);
            return RIP_DYN_KIND_BASE + e - 1;
        }
    }
    const char *copy = "region";
    if (rh_dyn_copied + n + 1 <= sizeof rh_dyn_copies) {
        char *c = rh_dyn_copies + rh_dyn_copied;
        memcpy(c, tmp, n + 1);
        rh_dyn_copied += n + 1;
        copy = c;
    }
    rh_spin_unlock(&rh_dyn_lock);
    return rh_kind_intern(copy);
}

void rh_kinds_fork(int phase)
{
    if (phase == 0)
        rh_spin_lock(&rh_dyn_lock);
    else if (phase == 1)
        rh_spin_unlock(&rh_dyn_lock);
    else
        rh_dyn_lock = 0;
}

void rh_kind_announce(struct rh_writer *w, unsigned kind, uint64_t t)
{
    uint32_t i = kind - RIP_DYN_KIND_BASE;
    if (i >= RIP_DYN_KIND_MAX)
        return;
    uint32_t want = w->epoch + 1;
    uint32_t old = __atomic_load_n(&rh_dyn_epoch[i], __ATOMIC_ACQUIRE);
    if (old == want ||
        !__atomic_compare_exchange_n(&rh_dyn_epoch[i], &old, want, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return;
    const char *name = __atomic_load_n(&rh_dyn_names[i], __ATOMIC_ACQUIRE);
    size_t len = name ? strnlen(name, RIP_MAX_KIND_NAME) : 0;
    uint8_t kb[10];
    size_t kl = (size_t)(rip_put_varint(kb, kind) - kb);
    if (rh_writer_reserve(w, 1 + 10 + 10 + kl + len, t) != 0)
        return; /* lost with the file; the converter then says "unknown" */
    uint8_t *q = w->pos;
    *q++ = RIP_OP_EXT;
    q = rip_put_varint(q, RIP_EXT_KINDNAME);
    q = rip_put_varint(q, kl + len);
    memcpy(q, kb, kl);
    memcpy(q + kl, name, len);
    w->pos = q + kl + len;
    rh_writer_commit(w);
}
