/* libxml2.c: a program parsing XML with the system's libxml2: every block the
 * parser allocates is a row (as many as valgrind counts), below
 * xmlReadMemory and main's calling line.
 *
 * One parse runs with libxml2's allocator hooks (xmlMemSetup) counting
 * malloc, realloc and strdup calls on top of the hooks libxml2 had (xmlMemGet),
 * which are then put back: ROUNDS parses with the defaults must give exactly
 * ROUNDS times that many rows below xmlReadMemory at their line, all freed
 * by xmlFreeDoc.
 */
#include <libxml/parser.h>
#include <libxml/xmlmemory.h>

#include "expect.h"

#define ROUNDS 30

static xmlFreeFunc o_free;
static xmlMallocFunc o_malloc;
static xmlReallocFunc o_realloc;
static xmlStrdupFunc o_strdup;
static int counted;

static void *c_malloc(size_t n)
{
    counted++;
    return o_malloc(n);
}

static void *c_realloc(void *p, size_t n)
{
    counted++;
    return o_realloc(p, n);
}

static char *c_strdup(const char *s)
{
    counted++;
    return o_strdup(s);
}

static const char doc[] = "<?xml version=\"1.0\"?><catalog><book id=\"b1\"><title>One</title>"
                          "<price>10</price></book><book id=\"b2\"><title>Two</title>"
                          "<price>20</price></book><note>heap &amp; stacks</note></catalog>";

int main(void)
{
    xmlInitParser();
    xmlDocPtr d = xmlReadMemory(doc, (int)sizeof doc - 1, "warm.xml", NULL, 0);
    if (!d)
        return 1;
    xmlFreeDoc(d);
    if (xmlMemGet(&o_free, &o_malloc, &o_realloc, &o_strdup) != 0)
        return 1;
    xmlMemSetup(o_free, c_malloc, c_realloc, c_strdup);
    d = xmlReadMemory(doc, (int)sizeof doc - 1, "count.xml", NULL, 0);
    if (!d)
        return 1;
    xmlFreeDoc(d);
    xmlMemSetup(o_free, o_malloc, o_realloc, o_strdup);
    int per_parse = counted;

    int line = 0;
    for (int r = 0; r < ROUNDS; r++) {
        line = __LINE__ + 1;
        d = xmlReadMemory(doc, (int)sizeof doc - 1, "doc.xml", NULL, 0);
        if (!d)
            return 1;
        xmlFreeDoc(d);
    }
    xmlCleanupParser();
    EXPECT((long long)ROUNDS * per_parse,
           "SELECT count(*) FROM allocations a WHERE dealloc_after IS NOT NULL AND bt IN "
           "(SELECT x.id FROM backtraces x JOIN backtraces y ON y.id = x.id AND "
           "y.frame_no > x.frame_no WHERE x.sym = 'xmlReadMemory' AND y.sym = 'main' "
           "AND y.line = %d)",
           line);
    EXPECT(0, "SELECT value FROM meta WHERE key = 'unknown_frees'");
    if (write(1, "VALGRIND\n", 9) != 9)
        return 1;
    return 0;
}
