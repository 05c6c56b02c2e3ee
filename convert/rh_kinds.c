/* rh_kinds.c: the names of dynamic kinds, read from a rip's KINDNAME records.
 *
 * Kinds from RIP_DYN_KIND_BASE up (a pool's name, a function of the user's
 * allocator file) have no number in the wrap table: the runtime names each in
 * the profile with one EXT KINDNAME record (FORMAT.md "Allocator families and
 * pools"). The decoder stores the names here as it meets them and rh_db.c's
 * rh_kind_name looks them up. One converter process reads one rip, so the
 * table is process-wide.
 */
#include <stdlib.h>
#include <string.h>

#include "rh_core.h"

#define RH_DYN_KINDS (0xffffu - RIP_DYN_KIND_BASE)

static char *rh_dyn_kind_names[RH_DYN_KINDS];

int rh_kind_define(uint32_t kind, const uint8_t *name, size_t len)
{
    if (kind < RIP_DYN_KIND_BASE || kind - RIP_DYN_KIND_BASE >= RH_DYN_KINDS)
        return 0;
    if (len > RIP_MAX_KIND_NAME)
        len = RIP_MAX_KIND_NAME;
    char *s = malloc(len + 1);
    if (!s)
        return -1;
    memcpy(s, name, len);
    s[len] = '\0';
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            s[i] = '?'; /* a damaged or hostile name stays one printable line */
    free(rh_dyn_kind_names[kind - RIP_DYN_KIND_BASE]);
    rh_dyn_kind_names[kind - RIP_DYN_KIND_BASE] = s;
    return 0;
}

const char *rh_kind_dyn_name(uint32_t kind)
{
    if (kind < RIP_DYN_KIND_BASE || kind - RIP_DYN_KIND_BASE >= RH_DYN_KINDS)
        return NULL;
    return rh_dyn_kind_names[kind - RIP_DYN_KIND_BASE];
}
