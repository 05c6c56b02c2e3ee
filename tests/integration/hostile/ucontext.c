/* The coroutine row of the hostile programs under the hostile runner: the program of
 * tests/integration/whole/ucontext.c (coroutines on mmap'ed 16 KiB stacks, the first
 * allocation on one), run plain and profiled side by side. */
#include "../whole/ucontext.c"
