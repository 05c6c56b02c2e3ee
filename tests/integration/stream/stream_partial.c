/* stream_partial.c: partial chunks (wire version 2) sent to `rheaper collect`
 * by hand (tests/integration/stream, case partial-rules).
 *
 *   stream_partial PORT
 *
 * One connection per case, in order: a version 1 stream that sends a partial
 * chunk (rejected); a version 2 stream whose second part leaves a gap
 * (rejected); pid 515151: chunk (slot 3, seq 0) sent in two parts and then
 * sealed, and chunk (slot 4, seq 0) sent in two parts and never sealed, then
 * a clean end. Each payload is EXT THREADNAME records, so the collected file
 * (one chunk in place of three pieces each) can be checked byte by byte.
 * Prints "sent N" at the end.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rip_format.h"

static int dial(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        perror("stream_partial: connect");
        exit(1);
    }
    return fd;
}

static void put(int fd, const void *p, size_t n)
{
    (void)!send(fd, p, n, MSG_NOSIGNAL); /* a rejected stream may close early */
}

/* Half-closes and waits for the collector's end (its ack or its close). */
static void finish(int fd)
{
    shutdown(fd, SHUT_WR);
    struct timeval tv = {2, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char b[64];
    while (recv(fd, b, sizeof b, 0) > 0)
        ;
    close(fd);
}

static void start(int fd, uint32_t version, uint32_t pid)
{
    uint8_t h[RIP_STREAM_HELLO_SIZE] = {0};
    memcpy(h, RIP_STREAM_MAGIC, 8);
    memcpy(h + 8, &version, 4);
    put(fd, h, sizeof h);
    uint8_t hdr[RIP_HEADER_SIZE] = {0};
    struct rip_file_header *f = (struct rip_file_header *)hdr;
    memcpy(f->magic, RIP_MAGIC, 8);
    f->version = RIP_VERSION;
    f->header_size = RIP_HEADER_SIZE;
    f->pid = pid;
    f->ppid = 1;
    f->max_stack_depth = 64;
    f->chunk_size = 16384;
    f->ticks_per_sec = 1000000000ull;
    f->crc = rip_crc32c(0, hdr, RIP_HEADER_SIZE);
    put(fd, hdr, sizeof hdr);
}

/* payload: THREADNAME records "aaaa", "bbbb", ... (7 bytes each) */
static uint8_t payload[70];

/* Sends payload[from, to) of chunk (slot, seq) as a part. */
static void part(int fd, uint32_t slot, uint32_t seq, uint32_t from, uint32_t to)
{
    struct rip_chunk_header ch = {0};
    ch.magic = RIP_CHUNK_MAGIC;
    ch.type = RIP_CHUNK_EVENTS;
    ch.flags = RIP_CHUNK_F_PART;
    ch.header_size = RIP_CHUNK_HDR_SIZE;
    ch.capacity = 4096 - RIP_CHUNK_HDR_SIZE;
    ch.slot = slot;
    ch.tid = 100 + slot;
    ch.seq = seq;
    ch.used = to;
    ch.reserved = from;
    put(fd, &ch, sizeof ch);
    put(fd, payload + from, to - from);
}

/* Sends chunk (slot, seq) sealed with payload[0, used). */
static void sealed(int fd, uint32_t slot, uint32_t seq, uint32_t used)
{
    struct rip_chunk_header ch = {0};
    ch.magic = RIP_CHUNK_MAGIC;
    ch.type = RIP_CHUNK_EVENTS;
    ch.flags = RIP_CHUNK_F_SEALED;
    ch.header_size = RIP_CHUNK_HDR_SIZE;
    ch.capacity = 4096 - RIP_CHUNK_HDR_SIZE;
    ch.slot = slot;
    ch.tid = 100 + slot;
    ch.seq = seq;
    ch.used = used;
    ch.crc = rip_chunk_crc(&ch, payload);
    put(fd, &ch, sizeof ch);
    put(fd, payload, used);
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    int port = atoi(argv[1]), n = 0;
    for (int i = 0; i < 10; i++) {
        uint8_t *r = payload + 7 * i;
        r[0] = RIP_OP_EXT;
        r[1] = RIP_EXT_THREADNAME;
        r[2] = 4;
        memset(r + 3, 'a' + i, 4);
    }

    int fd = dial(port); /* a part in a version 1 stream */
    start(fd, 1, 515150);
    part(fd, 3, 0, 0, 7);
    finish(fd), n++;

    fd = dial(port); /* a gap between two parts */
    start(fd, RIP_STREAM_WIRE_VERSION, 515150);
    part(fd, 3, 0, 0, 7);
    part(fd, 3, 0, 14, 21);
    finish(fd), n++;

    fd = dial(port); /* parts in place, one chunk sealed, one left open */
    start(fd, RIP_STREAM_WIRE_VERSION, 515151);
    part(fd, 3, 0, 0, 14);
    part(fd, 4, 0, 0, 7);
    part(fd, 3, 0, 14, 35);
    part(fd, 4, 0, 7, 21);
    sealed(fd, 3, 0, 49);
    finish(fd), n++;

    printf("sent %d\n", n);
    return 0;
}
