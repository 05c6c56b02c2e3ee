/* mmaps_static.c: mmaps.c linked -static, without its library (a static
 * program has no shared library to interpose for): the program's own calls,
 * through the --wrap shims only. */
#define RH_MMAPS_NO_LIB 1
#include "mmaps.c"
