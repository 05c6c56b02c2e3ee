// items.cpp: the item factory, in a file of its own so that LTO has a call
// across files to inline.
struct Item {
    long v[5];
};

Item *make_item(int i)
{
    Item *p = new Item();
    p->v[0] = i;
    return p;
}

void drop_item(Item *p)
{
    delete p;
}
