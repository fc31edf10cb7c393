#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""One QMP command: qmp.py SOCKET COMMAND [JSON-ARGUMENTS]. Prints the "return" value as JSON;
exits 1 with the error on stderr when QEMU answers one. Events before the answer are skipped."""
import json
import socket
import sys


def main():
    path, command = sys.argv[1], sys.argv[2]
    args = json.loads(sys.argv[3]) if len(sys.argv) > 3 else None
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(path)
    f = s.makefile("rw")
    json.loads(f.readline())  # greeting
    for cmd in ({"execute": "qmp_capabilities"},
                dict({"execute": command}, **({"arguments": args} if args else {}))):
        f.write(json.dumps(cmd) + "\n")
        f.flush()
        while True:
            msg = json.loads(f.readline())
            if "event" in msg:
                continue
            if "error" in msg:
                print(json.dumps(msg["error"]), file=sys.stderr)
                sys.exit(1)
            break
    print(json.dumps(msg.get("return")))


main()
