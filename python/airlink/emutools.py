"""Small traffic tools for emulation tests and benchmarks, run inside the namespaces as
``python -m airlink.emutools ...`` (no dependency beyond the standard library).

- ``send HOST PORT --count N --size B [--rate BPS]``: UDP datagrams whose IP packets are B
  bytes (B - 28 bytes of payload), paced at BPS or as one burst; each carries its number.
- ``recv PORT --count N --timeout S``: receives with kernel timestamps (SO_TIMESTAMPNS) and
  prints JSON: packets, first/last kernel timestamp (ns), IP bytes, sequence numbers seen.
- ``junk IFNAME --count N``: writes non-IP frames into the interface with a packet socket, as a
  misbehaving application could (the emulator must count and drop them).
"""

from __future__ import annotations

import argparse
import json
import socket
import struct
import sys
import time

IP_UDP_HEADERS = 28
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)


def send(host: str, port: int, count: int, size: int, rate_bps: float | None) -> None:
    payload_len = max(size - IP_UDP_HEADERS, 8)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    pad = b"\0" * (payload_len - 8)
    gap = None if not rate_bps else (payload_len + IP_UDP_HEADERS) * 8 / rate_bps
    start = time.monotonic()
    for i in range(count):
        if gap is not None:
            due = start + i * gap
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        while True:
            try:
                s.sendto(struct.pack("!Q", i) + pad, (host, port))
                break
            except (BlockingIOError, OSError):
                time.sleep(0.0005)


def recv(port: int, count: int, timeout: float) -> dict[str, object]:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.bind(("0.0.0.0", port))
    print("ready", file=sys.stderr, flush=True)
    s.settimeout(timeout)
    first = last = None
    n = 0
    ip_bytes = 0
    last_len = 0
    seqs_max = -1
    try:
        while n < count:
            data, anc, _, _ = s.recvmsg(65536, 1024)
            ts = None
            for level, kind, value in anc:
                if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                    sec, nsec = struct.unpack("qq", value[:16])
                    ts = sec * 1_000_000_000 + nsec
            if ts is None:
                ts = time.time_ns()
            if first is None:
                first = ts
            last = ts
            n += 1
            last_len = len(data) + IP_UDP_HEADERS
            ip_bytes += last_len
            if len(data) >= 8:
                seqs_max = max(seqs_max, struct.unpack("!Q", data[:8])[0])
            s.settimeout(min(timeout, 2.0))
    except TimeoutError:
        pass
    return {"packets": n, "first_ns": first, "last_ns": last, "ip_bytes": ip_bytes, "last_len": last_len,
            "max_seq": seqs_max}


def junk(ifname: str, count: int) -> None:
    # SOCK_DGRAM packet socket on a TUN device: the bytes go out as the "IP packet".
    s = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, 0)
    for i in range(count):
        frame = bytes([0xF0 | (i & 0x0F)]) + b"\xde\xad\xbe\xef" * 10
        s.sendto(frame, (ifname, 0x0800))
    # And an IPv4 first nibble with an impossible header length.
    s.sendto(b"\x4f" + b"\0" * 30, (ifname, 0x0800))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m airlink.emutools")
    sub = p.add_subparsers(dest="cmd", required=True)
    ps = sub.add_parser("send")
    ps.add_argument("host")
    ps.add_argument("port", type=int)
    ps.add_argument("--count", type=int, default=1000)
    ps.add_argument("--size", type=int, default=100)
    ps.add_argument("--rate", type=float)
    pr = sub.add_parser("recv")
    pr.add_argument("port", type=int)
    pr.add_argument("--count", type=int, default=1000)
    pr.add_argument("--timeout", type=float, default=30.0)
    pj = sub.add_parser("junk")
    pj.add_argument("ifname")
    pj.add_argument("--count", type=int, default=10)
    a = p.parse_args(argv)
    if a.cmd == "send":
        send(a.host, a.port, a.count, a.size, a.rate)
    elif a.cmd == "recv":
        print(json.dumps(recv(a.port, a.count, a.timeout)))
    else:
        junk(a.ifname, a.count)


if __name__ == "__main__":
    main()
