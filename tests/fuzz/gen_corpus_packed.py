#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the seed corpus of fuzz_packed.c into corpus/packed/: well-formed packed rings (chains,
indirect, across the ring end, a restorable inflight region) and one of each malformation, in the
target's input format (5 header bytes, then the guest memory image)."""
import struct
import sys

from seed_image import BASE, DATA, IMG_DESC, IMG_DRIVER, IMG_INFLIGHT, INDIRECT, NEXT, WRITE
from seed_image import GuestImage, buf, write_corpus

AVAIL, USED = 1 << 7, 1 << 15


class Image(GuestImage):
    def __init__(self, num, flags=0, max_iov=0, extra=0, start=0):
        super().__init__([num - 1, flags, max_iov, extra, start], DATA + 0x800)
        self.num = num
        self.slot = start % num
        self.wrap = not (extra & 2) or bool(extra & 4)

    def raw(self, i, addr, length, bid, flags):
        self.put(IMG_DESC + 16 * i, struct.pack("<QIHH", addr, length, bid, flags))

    def avail(self, wrap=None):
        w = self.wrap if wrap is None else wrap
        return AVAIL if w else USED

    def chain(self, descs):
        """descs: (addr, len, id, flags without NEXT/AVAIL/USED)"""
        for k, (addr, length, bid, flags) in enumerate(descs):
            f = flags | (NEXT if k + 1 < len(descs) else 0) | self.avail()
            self.raw(self.slot, addr, length, bid, f)
            self.slot += 1
            if self.slot == self.num:
                self.slot, self.wrap = 0, not self.wrap


def table(img, off, entries):
    for k, (addr, length, flags) in enumerate(entries):
        img.put(off + 16 * k, struct.pack("<QIHH", addr, length, 0, flags))
    return BASE + off


def inflight_region(img, num, heads):
    """A region left by a backend that popped `heads` (list of (id, addr, len, flags)), one
    descriptor each, and completed none."""
    hdr = struct.pack("<QHHHHHHBB7x", 0, 1, num, len(heads), len(heads), 0, 0, 1, 1)
    img.put(IMG_INFLIGHT, hdr)
    for i in range(num):
        if i < len(heads):
            bid, addr, length, flags = heads[i]
            ent = struct.pack("<BBHHHQHHIQ", 1, 0, i + 1, i, 1, i + 1, bid, flags, length, addr)
        else:
            ent = struct.pack("<BBHHHQHHIQ", 0, 0, i + 1, 0, 0, 0, 0, 0, 0, 0)
        img.put(IMG_INFLIGHT + 32 + 32 * i, ent)


def seeds():
    s = {}
    img = Image(8)
    img.chain([(buf(0), 16, 0, 0), (buf(1), 16, 0, 0), (buf(2), 32, 5, WRITE)])
    img.chain([(buf(3), 8, 1, 0)])
    s["valid-chains"] = img
    img = Image(5, extra=0x12 | 0x04 | 0x08, start=3)
    img.chain([(buf(0), 16, 2, 0), (buf(1), 16, 2, 0), (buf(2), 16, 2, WRITE)])
    img.chain([(buf(3), 16, 4, 0)])
    s["valid-across-ring-end"] = img
    img = Image(4, flags=1)
    t = table(img, DATA + 0x400, [(buf(0), 16, 0), (buf(1), 16, WRITE)])
    img.chain([(t, 32, 3, INDIRECT)])
    s["valid-indirect"] = img
    img = Image(8, flags=2, extra=1)
    for i in range(4):
        img.chain([(buf(i), 16, i, WRITE)])
    img.put(IMG_DRIVER, struct.pack("<HH", 0x8002, 2))
    s["valid-event-idx-unpop"] = img
    img = Image(4, flags=4)
    inflight_region(img, 4, [(2, buf(0), 16, AVAIL), (0, buf(1), 16, AVAIL | WRITE)])
    img.slot = 2  # the ring resumes after the two chains in flight
    img.chain([(buf(2), 16, 1, 0)])
    s["valid-inflight-restore"] = img

    img = Image(4)
    img.chain([(buf(0), 16, 4, 0)])
    s["bad-buffer-id"] = img
    img = Image(4)
    img.chain([(buf(0), 16, 1, 0)])
    img.chain([(buf(1), 16, 1, 0)])
    s["bad-buffer-id-in-flight"] = img
    img = Image(4)
    for i in range(4):
        img.raw(i, buf(i), 16, 0, NEXT | AVAIL)
    s["bad-chain-len"] = img
    img = Image(4, flags=1)
    t = table(img, DATA + 0x400, [(buf(0), 16, NEXT), (buf(1), 16, 0)])
    img.chain([(t, 32, 0, INDIRECT)])
    s["bad-indirect-flags"] = img
    img = Image(4, flags=1)
    t = table(img, DATA + 0x400, [(BASE + DATA + 0x400, 16, INDIRECT)])
    img.chain([(t, 16, 0, INDIRECT)])
    s["bad-nested-indirect"] = img
    img = Image(4)
    img.chain([(0xFFFFFFFFFFFFFFF0, 32, 0, 0)])
    s["bad-addr-overflow"] = img
    img = Image(4)
    img.chain([(BASE + 0x1FFF8, 16, 0, 0)])
    s["bad-addr-outside-map"] = img
    img = Image(4)
    img.raw(1, buf(1), 16, 0, USED)
    img.raw(0, buf(0), 16, 0, NEXT | AVAIL)
    s["bad-wrap"] = img
    img = Image(4)
    img.chain([(buf(0), 16, 0, WRITE), (buf(1), 16, 0, 0)])
    s["bad-write-order"] = img
    img = Image(4, max_iov=1)
    img.chain([(buf(0), 16, 0, 0), (buf(1), 16, 0, 0)])
    s["bad-iov-limit"] = img
    return s


if __name__ == "__main__":
    sys.exit(write_corpus("packed", seeds()))
