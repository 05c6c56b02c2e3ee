/* buffers.c: the C half of the project, built into a static library of its
 * own (with LTO, its archive needs the compiler's ar and ranlib): 24-byte
 * buffers from malloc. */
#include <stdlib.h>
#include <string.h>

char *make_buffer(int i)
{
    char *b = malloc(24);
    if (b) {
        memset(b, 0x5a, 24); /* not 0: clang would make malloc+memset a calloc */
        b[0] = (char)i;
    }
    return b;
}

void drop_buffer(char *b)
{
    free(b);
}
