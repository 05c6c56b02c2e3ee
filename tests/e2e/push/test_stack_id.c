/* test_stack_id.c: the stable stack id of `rheaper push` (rh_push_stack_id).
 *
 * The id is stored in every fleet's tables, so its definition must never
 * change silently: two values are pinned here. The rest are its properties:
 * the same frames give the same id; a frame's offset, its module, the order
 * of the frames, the kind and the truncation flag each change it; a frame
 * without a module differs from one in a module named ""; it is never 0.
 */
#include <stdint.h>
#include <stdio.h>

#include "harness.h"
#include "rh_push.h"

int main(void)
{
    const char *mods[3] = {"6f03384c2e3c38887dd3ba5a24b2e18c17e2f0e0",
                           "6f03384c2e3c38887dd3ba5a24b2e18c17e2f0e0",
                           "e025128345ce65b719dab776555f2b64ee0204a1"};
    int64_t offs[3] = {0x1234, 0x1300, 0x27f4a};
    uint64_t a = rh_push_stack_id("malloc", 0, 3, mods, offs);

    /* pinned: ids pushed by earlier versions must keep meaning the same */
    printf("id(malloc, 3 frames) = %#llx\n", (unsigned long long)a);
    CHECK(a == 0xed934afb76ca41f9ull);
    const char *nomod[1] = {NULL};
    int64_t o1[1] = {0x400000};
    uint64_t b = rh_push_stack_id(NULL, 1, 1, nomod, o1);
    printf("id(no kind, truncated, 1 frame without module) = %#llx\n", (unsigned long long)b);
    CHECK(b == 0x9e94272f0e2103bull);

    CHECK_EQ(rh_push_stack_id("malloc", 0, 3, mods, offs), a);
    int64_t offs2[3] = {0x1234, 0x1301, 0x27f4a};
    CHECK(rh_push_stack_id("malloc", 0, 3, mods, offs2) != a);
    const char *mods2[3] = {mods[0], mods[1], "ffa749676337f8bc686d2a95e1bd92c8c1444341"};
    CHECK(rh_push_stack_id("malloc", 0, 3, mods2, offs) != a);
    const char *rmods[3] = {mods[1], mods[0], mods[2]};
    int64_t roffs[3] = {0x1300, 0x1234, 0x27f4a};
    CHECK(rh_push_stack_id("malloc", 0, 3, rmods, roffs) != a);
    CHECK(rh_push_stack_id("calloc", 0, 3, mods, offs) != a);
    CHECK(rh_push_stack_id(NULL, 0, 3, mods, offs) != a);
    CHECK(rh_push_stack_id("malloc", 1, 3, mods, offs) != a);
    CHECK(rh_push_stack_id("malloc", 0, 2, mods, offs) != a);
    const char *empty[1] = {""};
    CHECK(rh_push_stack_id("malloc", 0, 1, nomod, o1) !=
          rh_push_stack_id("malloc", 0, 1, empty, o1));
    /* module and offset do not run together: ("ab", x) is not ("a", y) */
    const char *m_ab[1] = {"ab"}, *m_a[1] = {"a"};
    int64_t x[1] = {0x62}, y[1] = {0x62};
    CHECK(rh_push_stack_id("malloc", 0, 1, m_ab, x) != rh_push_stack_id("malloc", 0, 1, m_a, y));
    int zero = 0;
    for (int64_t off = 0; off < 100000; off++) {
        int64_t o[1] = {off};
        zero += rh_push_stack_id("malloc", 0, 1, mods, o) == 0;
    }
    CHECK_EQ(zero, 0);
    return rh_test_summary();
}
