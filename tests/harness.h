/* harness.h: the tiny unit-test harness every C test program uses.
 *
 * CHECK(cond) and CHECK_EQ(a, b) record a failure with file and line and go on;
 * rh_test_summary() prints "N passed, N failed" and returns the failure count,
 * which main returns, so each test program is one ctest entry and its exit
 * status says how many checks failed. The count is capped at
 * RH_TEST_FAIL_MAX (76): an exit status is taken modulo 256, so 256 failures
 * would read as success, and 77 is the status of a skipped test
 * (SKIP_RETURN_CODE). A program that made no check at all fails with 1 (it
 * counts as one failure): a test that cannot fail is not a test.
 */
#ifndef RH_TEST_HARNESS_H
#define RH_TEST_HARNESS_H

#include <stdio.h>

static int rh_test_pass, rh_test_fail;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (cond) {                                                                                \
            rh_test_pass++;                                                                        \
        } else {                                                                                   \
            rh_test_fail++;                                                                        \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

#define CHECK_EQ(a, b)                                                                             \
    do {                                                                                           \
        long long rh_a_ = (long long)(a), rh_b_ = (long long)(b);                                  \
        if (rh_a_ == rh_b_) {                                                                      \
            rh_test_pass++;                                                                        \
        } else {                                                                                   \
            rh_test_fail++;                                                                        \
            fprintf(stderr, "%s:%d: CHECK_EQ failed: %s = %lld, %s = %lld\n", __FILE__, __LINE__,  \
                    #a, rh_a_, #b, rh_b_);                                                         \
        }                                                                                          \
    } while (0)

#define RH_TEST_FAIL_MAX 76

static inline int rh_test_summary(void)
{
    printf("%d passed, %d failed\n", rh_test_pass, rh_test_fail);
    if (rh_test_pass + rh_test_fail == 0) {
        printf("FAIL: no check ran\n");
        return 1;
    }
    return rh_test_fail < RH_TEST_FAIL_MAX ? rh_test_fail : RH_TEST_FAIL_MAX;
}

#endif
