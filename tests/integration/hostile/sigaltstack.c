/* The sigaltstack row: tests/integration/whole/sigaltstack.c under the hostile runner. */
#include "../whole/sigaltstack.c"
