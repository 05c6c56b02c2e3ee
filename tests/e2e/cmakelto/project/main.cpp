// main.cpp: makes 40 items through items.cpp (one `new` each) and 30 buffers
// through the C library (buffers.c, one `malloc` each) and prints the counts,
// for tests/e2e/cmakelto/run.sh.
#include <cstdio>
#include <vector>

struct Item;
Item *make_item(int i);
void drop_item(Item *p);
extern "C" char *make_buffer(int i);
extern "C" void drop_buffer(char *b);

int main()
{
    std::vector<Item *> v;
    v.reserve(40);
    for (int i = 0; i < 40; i++)
        v.push_back(make_item(i));
    for (Item *p : v)
        drop_item(p);
    std::vector<char *> b;
    b.reserve(30);
    for (int i = 0; i < 30; i++)
        b.push_back(make_buffer(i));
    static volatile int sum;
    for (char *p : b) {
        sum = sum + p[0]; // the buffers are used: LTO may not drop their malloc
        drop_buffer(p);
    }
    std::printf("items 40 buffers 30\n");
    return 0;
}
