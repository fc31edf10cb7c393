#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the seed corpus of fuzz_split.c into corpus/split/: a few well-formed rings and one of
each malformation, in the target's input format (4 header bytes, then the guest memory image)."""
import struct
import sys

from seed_image import BASE, DATA, IMG_DESC, IMG_DRIVER, IMG_INFLIGHT, INDIRECT, NEXT, SPAN, WRITE
from seed_image import GuestImage, buf, write_corpus

IMG_AVAIL = IMG_DRIVER


class Image(GuestImage):
    def __init__(self, num_log2, flags=0, max_iov=0, extra=0):
        super().__init__([num_log2, flags, max_iov, extra], DATA + 0x400)
        self.num = 1 << num_log2
        self.avail_idx = 0

    def desc_at(self, off, addr, length, flags=0, nxt=0):
        self.put(off, struct.pack("<QIHH", addr, length, flags, nxt))

    def desc(self, i, addr, length, flags=0, nxt=0):
        self.desc_at(IMG_DESC + 16 * i, addr, length, flags, nxt)

    def publish(self, head, idx=None):
        self.put(IMG_AVAIL + 4 + 2 * (self.avail_idx % self.num), struct.pack("<H", head))
        self.avail_idx = self.avail_idx + 1 if idx is None else idx
        self.put(IMG_AVAIL + 2, struct.pack("<H", self.avail_idx & 0xFFFF))


def seeds():
    s = {}
    img = Image(3)
    img.desc(0, buf(0), 16, NEXT, 1)
    img.desc(1, buf(1), 32, WRITE)
    img.publish(0)
    img.desc(2, buf(2), 8)
    img.publish(2)
    s["valid-two-chains"] = img

    img = Image(3, flags=1)
    img.desc_at(DATA + 0x200, buf(0), 16, NEXT, 1)
    img.desc_at(DATA + 0x210, buf(1), 16, WRITE)
    img.desc(0, buf(2), 4, NEXT, 3)
    img.desc(3, BASE + DATA + 0x200, 32, INDIRECT)
    img.publish(0)
    s["valid-chain-ending-in-indirect"] = img

    img = Image(2, flags=2)
    img.desc(0, BASE + SPAN - 8, 16, WRITE)  # straddles the two regions
    img.publish(0)
    img.put(IMG_AVAIL + 4 + 2 * 4, struct.pack("<H", 0))  # used_event
    s["valid-spanning-event-idx"] = img

    img = Image(3, flags=8, extra=1)
    for i in range(3):
        img.desc(i, buf(i), 8, WRITE)
        img.publish(i)
    # inflight region: version 1, desc_num 8, head 0 (popped first) in flight with counter 5
    img.put(IMG_INFLIGHT, struct.pack("<QHHHH", 0, 1, 8, 0, 0))
    img.put(IMG_INFLIGHT + 16, struct.pack("<B5xHQ", 1, 0, 5))
    s["valid-inflight-restore"] = img

    img = Image(3)
    img.desc(0, buf(0), 8, NEXT, 1)
    img.desc(1, buf(1), 8, NEXT, 0)
    img.publish(0)
    s["bad-loop"] = img

    img = Image(3)
    img.publish(9)
    s["bad-head-range"] = img

    img = Image(3)
    img.desc(0, buf(0), 8, NEXT, 8)
    img.publish(0)
    s["bad-next-range"] = img

    img = Image(3, flags=1)
    img.desc_at(DATA + 0x200, BASE + DATA + 0x200, 16, INDIRECT)
    img.desc(0, BASE + DATA + 0x200, 16, INDIRECT)
    img.publish(0)
    s["bad-nested-indirect"] = img

    img = Image(3, flags=1)
    img.desc(0, BASE + DATA + 0x200, 24, INDIRECT)
    img.publish(0)
    s["bad-indirect-len"] = img

    img = Image(3)
    img.desc(0, buf(0), 8, WRITE | NEXT, 1)
    img.desc(1, buf(1), 8)
    img.publish(0)
    s["bad-write-order"] = img

    img = Image(3)
    img.desc(0, 0xFFFFFFFFFFFFFFF0, 64)
    img.publish(0)
    s["bad-addr-overflow"] = img

    img = Image(3)
    img.desc(0, buf(0), 8)
    img.publish(0, idx=9)
    s["bad-avail-idx"] = img

    img = Image(3, max_iov=2)
    for i in range(3):
        img.desc(i, buf(i), 8, NEXT if i < 2 else 0, i + 1)
    img.publish(0)
    s["bad-iov-limit"] = img
    return s


if __name__ == "__main__":
    sys.exit(write_corpus("split", seeds()))
