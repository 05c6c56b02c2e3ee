/* aprpool.h: the pool API of APR's apr_pools.h and apr_strings.h, same names
 * and signatures. */
#ifndef APRPOOL_H
#define APRPOOL_H
#include <stddef.h>
typedef int apr_status_t;
typedef size_t apr_size_t;
typedef struct apr_pool_t apr_pool_t;
typedef struct apr_allocator_t apr_allocator_t;
typedef int (*apr_abortfunc_t)(int retcode);
#define APR_SUCCESS 0
apr_status_t apr_pool_create_ex(apr_pool_t **newpool, apr_pool_t *parent,
                                apr_abortfunc_t abort_fn, apr_allocator_t *allocator);
#define apr_pool_create(newpool, parent) apr_pool_create_ex(newpool, parent, NULL, NULL)
void apr_pool_tag(apr_pool_t *pool, const char *tag);
void *apr_palloc(apr_pool_t *p, apr_size_t size);
void *apr_pcalloc(apr_pool_t *p, apr_size_t size);
char *apr_pstrdup(apr_pool_t *p, const char *s);
void apr_pool_clear(apr_pool_t *p);
void apr_pool_destroy(apr_pool_t *p);
#endif
