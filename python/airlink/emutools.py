"""A misbehaving application for emulation tests, run inside a namespace as
``python -m airlink.emutools junk IFNAME --count N``: writes non-IP frames into the interface
with a packet socket (the emulator must count and drop them). Traffic sources and sinks are
``airlink udpgen send|recv``.
"""

from __future__ import annotations

import argparse
import socket

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
    pj = sub.add_parser("junk")
    pj.add_argument("ifname")
    pj.add_argument("--count", type=int, default=10)
    a = p.parse_args(argv)
    junk(a.ifname, a.count)


if __name__ == "__main__":
    main()
