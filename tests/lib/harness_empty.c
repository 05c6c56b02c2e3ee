/* harness_empty.c: a test program that makes no check. tests/harness.h's
 * summary must fail it (lib-harness-empty expects exit status 1 and the
 * "no check ran" line): a test that cannot fail is not a test. */
#include "../harness.h"

int main(void)
{
    return rh_test_summary();
}
