// main.cpp: makes 40 items through items.cpp (one `new` each) and prints the
// count, for tests/e2e/cmakelto/run.sh.
#include <cstdio>
#include <vector>

struct Item;
Item *make_item(int i);
void drop_item(Item *p);

int main()
{
    std::vector<Item *> v;
    v.reserve(40);
    for (int i = 0; i < 40; i++)
        v.push_back(make_item(i));
    for (Item *p : v)
        drop_item(p);
    std::printf("items 40\n");
    return 0;
}
