# SPDX-License-Identifier: MIT
"""What the seed generators of the ring fuzz targets share: the guest memory image of
fuzz_guest.h (header bytes, then the image copied to guest memory at BASE) and writing a corpus."""
import os
import sys

BASE = 0x100000
SPAN = 0x10000
# fuzz_guest.h's FUZZ_IMG_*: descriptors, driver area (split: avail ring; packed: driver event
# suppression), device area (split: used ring; packed: device event suppression), inflight region.
IMG_DESC, IMG_DRIVER, IMG_DEVICE, IMG_INFLIGHT = 0x0, 0x200, 0x300, 0x800
DATA = 0x1000
NEXT, WRITE, INDIRECT = 1, 2, 4


def buf(i):
    """Guest address of the i-th small data buffer."""
    return BASE + DATA + 0x40 * i


class GuestImage:
    def __init__(self, hdr, size):
        self.hdr = bytes(hdr)
        self.mem = bytearray(size)

    def put(self, off, data):
        end = off + len(data)
        if end > len(self.mem):
            self.mem.extend(bytes(end - len(self.mem)))
        self.mem[off:end] = data

    def bytes(self):
        return self.hdr + bytes(self.mem)


def write_corpus(name, seeds):
    """Write seeds ({file name: GuestImage}) into the directory named on the command line, or
    into corpus/<name>/ beside this script."""
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "corpus", name)
    os.makedirs(out, exist_ok=True)
    for seed, img in seeds.items():
        with open(os.path.join(out, seed), "wb") as f:
            f.write(img.bytes())
    return 0
