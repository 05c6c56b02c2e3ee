/* The sigaltstack row: tests/whole/sigaltstack.c under the hostile runner. */
#include "../whole/sigaltstack.c"
