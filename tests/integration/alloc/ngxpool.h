/* ngxpool.h: the pool API of nginx's ngx_palloc.h, same names and signatures. */
#ifndef NGXPOOL_H
#define NGXPOOL_H
#include <stddef.h>
#include <stdint.h>
typedef intptr_t ngx_int_t;
typedef struct ngx_pool_s ngx_pool_t;
typedef struct ngx_log_s ngx_log_t;
#define NGX_OK 0
#define NGX_DECLINED -5
ngx_pool_t *ngx_create_pool(size_t size, ngx_log_t *log);
void ngx_destroy_pool(ngx_pool_t *pool);
void ngx_reset_pool(ngx_pool_t *pool);
void *ngx_palloc(ngx_pool_t *pool, size_t size);
void *ngx_pnalloc(ngx_pool_t *pool, size_t size);
void *ngx_pcalloc(ngx_pool_t *pool, size_t size);
void *ngx_pmemalign(ngx_pool_t *pool, size_t size, size_t alignment);
ngx_int_t ngx_pfree(ngx_pool_t *pool, void *p);
#endif
