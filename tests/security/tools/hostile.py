#!/usr/bin/env python3
"""hostile.py: the attacker's clients of the tools' security tests.

Run as the unprivileged user (setpriv to nobody) against a server or a
collector on 127.0.0.1. Every mode prints one line of figures and exits 0;
the shell test asserts on them.

  half PORT N HOLD        opens N connections that each send half an HTTP
                          request, holds them up to HOLD s; prints
                          "opened N closed K last S" (S: seconds until the
                          server's last close)
  trickle PORT GAP HOLD   one connection that sends a request line and then
                          one header line every GAP s; prints "closed S"
                          (seconds until the server closed it, -1: never)
  kept PORT HOLD          one kept-alive connection: one whole request, its
                          answer read, then nothing; prints "answered CODE
                          closed S" (S: seconds from the answer to the
                          server's close, -1: never)
  idle PORT N HOLD        N connections that send nothing (a collector's
                          handshake), held up to HOLD s; prints
                          "opened N closed K last S"
  chunks PORT N CAP TPL   a valid rip stream hello and header (TPL: a rip
                          file whose first 4096 bytes are used), then N chunk
                          headers that declare CAP bytes of capacity and
                          carry nothing; prints "sent B"
  flood PORT MIB TPL      a valid hello and header, then chunks of 1 MiB
                          payload until MIB MiB were sent or the collector
                          closed; prints "sent B closed C"
"""
import socket
import struct
import sys
import time


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=1)
    s.setblocking(False)
    return s


def wait_closed(socks, hold):
    """Waits until every socket is closed by the peer or hold s passed.
    Returns (closed, seconds until the last close)."""
    import select
    t0 = time.monotonic()
    open_ = set(socks)
    last = 0.0
    while open_ and time.monotonic() - t0 < hold:
        r, _, _ = select.select(list(open_), [], [], 0.2)
        for s in r:
            try:
                d = s.recv(65536)
            except (ConnectionResetError, BrokenPipeError):
                d = b""
            except BlockingIOError:
                continue
            if not d:
                open_.discard(s)
                last = time.monotonic() - t0
    return len(socks) - len(open_), last


def half(port, n, hold):
    socks = []
    t0 = time.monotonic()
    for _ in range(n):
        if time.monotonic() - t0 > hold / 2:
            break
        try:
            s = connect(port)
            s.send(b"GET /list HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            socks.append(s)
        except OSError:
            pass
    k, last = wait_closed(socks, hold)
    print("opened %d closed %d last %.1f" % (len(socks), k, last))


def trickle(port, gap, hold):
    s = connect(port)
    s.send(b"GET /list HTTP/1.1\r\n")
    t0 = time.monotonic()
    i = 0
    while time.monotonic() - t0 < hold:
        k, _ = wait_closed([s], gap)
        if k:
            print("closed %.1f" % (time.monotonic() - t0))
            return
        try:
            s.send(b"X-Slow-%d: a\r\n" % i)
        except OSError:
            print("closed %.1f" % (time.monotonic() - t0))
            return
        i += 1
    print("closed -1")


def kept(port, hold):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"GET /list HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    data = b""
    while b"\r\n\r\n" not in data:
        data += s.recv(65536)
    head, body = data.split(b"\r\n\r\n", 1)
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    while len(body) < length:
        body += s.recv(65536)
    code = head.split(b" ")[1].decode()
    s.setblocking(False)
    t0 = time.monotonic()
    k, _ = wait_closed([s], hold)
    print("answered %s closed %.1f" % (code, time.monotonic() - t0 if k else -1))


def idle(port, n, hold):
    socks = []
    t0 = time.monotonic()
    for _ in range(n):
        if time.monotonic() - t0 > hold / 2:
            break  # the backlog is full: what is open is the attack
        try:
            socks.append(connect(port))
        except OSError:
            pass
    k, last = wait_closed(socks, hold)
    print("opened %d closed %d last %.1f" % (len(socks), k, last))


RIP_HEADER_SIZE = 4096


def stream_start(port):
    """A hello and a valid rip file header: the first 4096 bytes of a real
    rip file (TEMPLATE, the last argument)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"RHSTREAM" + struct.pack("<II", 1, 0))
    s.sendall(open(sys.argv[-1], "rb").read(RIP_HEADER_SIZE))
    return s


def chunk_header(cap, used, payload=b"", seq=0, sealed=True):
    # magic, type (1: events), flags (1: sealed), header size, capacity,
    # used, crc, slot, tid, seq, base_time, calib_tick, calib_ns, events
    h = struct.pack("<IBBHIIIIIIQQQII", CHUNK_MAGIC, 1, 1 if sealed else 0, 64, cap, used, 0, 0, 1,
                    seq, 0, 0, 0, 0, 0)
    crc = crc32c(payload, crc32c(h))
    return h[:16] + struct.pack("<I", crc) + h[20:]


CHUNK_MAGIC = 0x4B434852  # "RHCK"


def chunks(port, n, cap):
    s = stream_start(port)
    sent = 0
    try:
        for i in range(n):
            s.sendall(chunk_header(cap, 0, seq=i))
            sent += 64
        s.shutdown(socket.SHUT_WR)
        s.settimeout(10)
        while s.recv(4096):
            pass
    except OSError:
        pass
    print("sent %d" % sent)


def flood(port, mib):
    s = stream_start(port)
    sent = 0
    closed = 0
    payload = b"\0" * (1 << 20)
    h = chunk_header(1 << 20, 1 << 20, sealed=False)
    try:
        for i in range(mib):
            s.sendall(h + payload)
            sent += len(h) + len(payload)
    except OSError:
        closed = 1
    print("sent %d closed %d" % (sent, closed))


def main():
    mode = sys.argv[1]
    a = [int(x) for x in sys.argv[2:5] if x.lstrip("-").isdigit()]
    if mode == "half":
        half(*a[:3])
    elif mode == "trickle":
        trickle(*a[:3])
    elif mode == "kept":
        kept(*a[:2])
    elif mode == "idle":
        idle(*a[:3])
    elif mode in ("chunks", "flood"):
        # hostile.py chunks PORT N CAP TEMPLATE, hostile.py flood PORT MIB TEMPLATE
        if mode == "chunks":
            chunks(*a[:3])
        else:
            flood(*a[:2])
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main()
