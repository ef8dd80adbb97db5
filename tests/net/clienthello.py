#!/usr/bin/env python3
"""Writes real TLS ClientHellos made by Python's ssl module (OpenSSL), each
as a 4-byte big-endian length and the bytes, in this order:
  1. server_hostname="api.test"  2. no server name  3. "Other.Test."
tests/net/parsers_test.c reads them."""
import ssl
import struct
import sys


def hello(name):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, out, server_hostname=name)
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return out.read()


for n in ("api.test", None, "Other.Test."):
    h = hello(n)
    sys.stdout.buffer.write(struct.pack(">I", len(h)) + h)
