/* stream_garbage.c: a hostile client for `rheaper collect` (tests/integration/stream).
 *
 *   stream_garbage PORT
 *
 * Opens one connection per kind of bad input, in order, to 127.0.0.1:PORT:
 * random bytes; a hello of an unknown wire version; a valid hello and a header
 * with a bad checksum; a valid header and a chunk header claiming 1 GiB; a
 * valid header, one empty sealed chunk and a chunk cut off mid-payload (pid
 * 424242: the collector keeps rip-424242, which must convert as cut short);
 * three bytes and a close. Prints "sent N" at the end. Never waits for answers
 * beyond each connection's close.
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
        perror("stream_garbage: connect");
        exit(1);
    }
    return fd;
}

static void put(int fd, const void *p, size_t n)
{
    /* the collector may close early on bad input: that is the point */
    (void)!send(fd, p, n, MSG_NOSIGNAL);
}

/* Closes after the collector has closed its end (or 2 s), so each case is
 * handled before the next one starts. */
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

static void hello(int fd, uint32_t version)
{
    uint8_t h[RIP_STREAM_HELLO_SIZE] = {0};
    memcpy(h, RIP_STREAM_MAGIC, 8);
    memcpy(h + 8, &version, 4);
    put(fd, h, sizeof h);
}

static void header(int fd, int good_crc)
{
    uint8_t hdr[RIP_HEADER_SIZE] = {0};
    struct rip_file_header *h = (struct rip_file_header *)hdr;
    memcpy(h->magic, RIP_MAGIC, 8);
    h->version = RIP_VERSION;
    h->header_size = RIP_HEADER_SIZE;
    h->pid = 424242;
    h->ppid = 1;
    h->max_stack_depth = 64;
    h->chunk_size = 16384;
    h->ticks_per_sec = 1000000000ull;
    h->crc = rip_crc32c(0, hdr, RIP_HEADER_SIZE) ^ (good_crc ? 0u : 1u);
    put(fd, hdr, sizeof hdr);
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    int port = atoi(argv[1]), n = 0;

    int fd = dial(port); /* random bytes */
    uint8_t junk[5000];
    srand(11);
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (uint8_t)rand();
    put(fd, junk, sizeof junk);
    finish(fd), n++;

    fd = dial(port); /* unknown wire version */
    hello(fd, 99);
    finish(fd), n++;

    fd = dial(port); /* header checksum */
    hello(fd, RIP_STREAM_WIRE_VERSION);
    header(fd, 0);
    finish(fd), n++;

    struct rip_chunk_header ch = {0};
    ch.magic = RIP_CHUNK_MAGIC;
    ch.type = RIP_CHUNK_EVENTS;
    ch.header_size = RIP_CHUNK_HDR_SIZE;

    fd = dial(port); /* a chunk of 1 GiB */
    hello(fd, RIP_STREAM_WIRE_VERSION);
    header(fd, 1);
    ch.capacity = 1u << 30;
    ch.used = 1u << 30;
    put(fd, &ch, sizeof ch);
    finish(fd), n++;

    fd = dial(port); /* one empty sealed chunk, then one cut mid-payload */
    hello(fd, RIP_STREAM_WIRE_VERSION);
    header(fd, 1);
    ch.capacity = 4096 - RIP_CHUNK_HDR_SIZE;
    ch.used = 0;
    ch.flags = RIP_CHUNK_F_SEALED;
    ch.crc = rip_chunk_crc(&ch, NULL);
    put(fd, &ch, sizeof ch);
    ch.used = 1000;
    ch.seq = 1;
    put(fd, &ch, sizeof ch);
    put(fd, junk, 10);
    finish(fd), n++;

    fd = dial(port); /* three bytes */
    put(fd, "RHS", 3);
    finish(fd), n++;

    printf("sent %d\n", n);
    return 0;
}
