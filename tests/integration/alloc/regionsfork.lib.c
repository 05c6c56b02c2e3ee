/* regionsfork.lib.c: the miniature memory contexts of regions.lib.c. */
#include "regions.lib.c"
