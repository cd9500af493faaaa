#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Independent SipHash-c-d reference for Ringmaster's golden hash vectors.

Written from the SipHash paper (Aumasson & Bernstein, "SipHash: a fast
short-input PRF", 2012, sections 2.1-2.3), not from include/ringmaster/
rm_hash.h, so it can catch a mistake in the C code rather than copy it:

  * key k (16 bytes) -> k0 = bytes 0..7, k1 = bytes 8..15, little-endian
  * v0..v3 = k0^"somepseu", k1^"dorandom", k0^"lygenera", k1^"tedbytes"
  * message padded with zeros to 8*w - 1 bytes, last byte = len mod 256;
    parsed as w little-endian 64-bit words; each word: v3 ^= m, c SipRounds,
    v0 ^= m
  * finalisation: v2 ^= 0xff, d SipRounds, output v0^v1^v2^v3

Ringmaster's flow hash is the low 32 bits of SipHash-1-3 over the wire bytes
src|dst|sport|dport|proto (13 bytes for IPv4, 37 for IPv6, addresses and
ports in network order); a vnode point is the low 32 bits of SipHash-1-3 over
the node name zero-padded to 32 bytes followed by the vnode index as 4
little-endian bytes. The seed's text form is the 16 key bytes in order.

Run: python3 tests/unit/siphash_ref.py
It first checks the implementation against published vectors (SipHash-2-4
from the paper's appendix and the reference vectors.h; SipHash-1-3 low 32
bits from the Linux kernel's lib siphash self-test, 64-bit hsiphash), exits
non-zero on any mismatch, then prints the golden tables that
tests/unit/test_hash.c hard-codes.
"""

import socket
import struct
import sys

MASK = (1 << 64) - 1


def rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & MASK


def sipround(v):
    v0, v1, v2, v3 = v
    v0 = (v0 + v1) & MASK
    v1 = rotl(v1, 13)
    v1 ^= v0
    v0 = rotl(v0, 32)
    v2 = (v2 + v3) & MASK
    v3 = rotl(v3, 16)
    v3 ^= v2
    v0 = (v0 + v3) & MASK
    v3 = rotl(v3, 21)
    v3 ^= v0
    v2 = (v2 + v1) & MASK
    v1 = rotl(v1, 17)
    v1 ^= v2
    v2 = rotl(v2, 32)
    return [v0, v1, v2, v3]


def siphash(c, d, key, msg):
    """SipHash-c-d of bytes msg under the 16-byte key; returns a 64-bit int."""
    assert len(key) == 16
    k0, k1 = struct.unpack("<QQ", key)
    v = [k0 ^ int.from_bytes(b"somepseu", "big"),
         k1 ^ int.from_bytes(b"dorandom", "big"),
         k0 ^ int.from_bytes(b"lygenera", "big"),
         k1 ^ int.from_bytes(b"tedbytes", "big")]
    # pad to a multiple of 8 with the length byte last
    padded = bytearray(msg)
    while len(padded) % 8 != 7:
        padded.append(0)
    padded.append(len(msg) & 0xff)
    for i in range(0, len(padded), 8):
        m = int.from_bytes(padded[i:i + 8], "little")
        v[3] ^= m
        for _ in range(c):
            v = sipround(v)
        v[0] ^= m
    v[2] ^= 0xff
    for _ in range(d):
        v = sipround(v)
    return v[0] ^ v[1] ^ v[2] ^ v[3]


# ---- published vectors ----------------------------------------------------

# SipHash-2-4, key 00..0f, message 00..(n-1): reference vectors.h
# (vectors_sip64, also the Linux kernel's test_vectors_siphash).
SIP24 = [
    0x726fdb47dd0e0e31, 0x74f839c593dc67fd, 0x0d6c8009d9a94f5a,
    0x85676696d7fb7e2d, 0xcf2794e0277187b7, 0x18765564cd99a68d,
    0xcbc9466e58fee3ce, 0xab0200f58b01d137, 0x93f5f5799a932462,
    0x9e0082df0ba9e4b0, 0x7a5dbbc594ddb9f3, 0xf4b32f46226bada7,
    0x751e8fbc860ee5fb, 0x14ea5627c0843d90, 0xf723ca908e7af2ee,
    0xa129ca6149be45e5, 0x3f2acc7f57c29bdb, 0x699ae9f52cbe4794,
    0x4bc1b3f0968dd39c, 0xbb6dc91da77961bd, 0xbed65cf21aa2ee98,
    0xd0f2cbb02e3b67c7, 0x93536795e3a33e88, 0xa80c038ccd5ccec8,
    0xb8ad50c6f649af94, 0xbce192de8a85b8ea, 0x17d835b85bbb15f3,
    0x2f2e6163076bcfad, 0xde4daaaca71dc9a5, 0xa6a2506687956571,
    0xad87a3535c49ef28, 0x32d892fad841c342, 0x7127512f72f27cce,
    0xa7f32346f95978e3, 0x12e0b01abb051238, 0x15e034d40fa197ae,
    0x314dffbe0815a3b4, 0x027990f029623981, 0xcadcd4e59ef40c4d,
    0x9abfd8766a33735c, 0x0e3ea96b5304a7d0, 0xad0c42d6fc585992,
    0x187306c89bc215a9, 0xd4a60abcf3792b95, 0xf935451de4f21df2,
    0xa9538f0419755787, 0xdb9acddff56ca510, 0xd06c98cd5c0975eb,
    0xe612a3cb9ecba951, 0xc766e62cfcadaf96, 0xee64435a9752fe72,
    0xa192d576b245165a, 0x0a8787bf8ecb74b2, 0x81b3e73d20b49b6f,
    0x7fa8220ba3b2ecea, 0x245731c13ca42499, 0xb78dbfaf3a8d83bd,
    0xea1ad565322a1a0b, 0x60e61c23a3795013, 0x6606d7e446282b93,
    0x6ca4ecb15c5f91e1, 0x9f626da15c9625f3, 0xe51b38608ef25f57,
    0x958a324ceb064572,
]

# SipHash-1-3, low 32 bits, key 00..0f, message 00..(n-1): the Linux
# kernel's siphash self-test (test_vectors_hsiphash, BITS_PER_LONG == 64,
# where hsiphash is SipHash-1-3 truncated to u32).
SIP13_LO32 = [
    0x050fc4dc, 0x7d57ca93, 0x4dc7d44d, 0xe7ddf7fb, 0x88d38328, 0x49533b67,
    0xc59f22a7, 0x9bb11140, 0x8d299a8e, 0x6c063de4, 0x92ff097f, 0xf94dc352,
    0x57b4d9a2, 0x1229ffa7, 0xc0f95d34, 0x2a519956, 0x7d908b66, 0x63dbd80c,
    0xb473e63e, 0x8d297d1c, 0xa6cce040, 0x2b45f844, 0xa320872e, 0xdae6c123,
    0x67349c8c, 0x705b0979, 0xca9913a5, 0x4ade3b35, 0xef6cd00d, 0x4ab1e1f4,
    0x43c5e663, 0x8c21d1bc, 0x16a7b60d, 0x7a8ff9bf, 0x1f2a753e, 0xbf186b91,
    0xada26206, 0xa3c33057, 0xae3a36a1, 0x7b108392, 0x99e41531, 0x3f1ad944,
    0xc8138825, 0xc28949a6, 0xfaf8876b, 0x9f042196, 0x68b1d623, 0x8b5114fd,
    0xdf074c46, 0x12cc86b3, 0x0a52098f, 0x9d292f9a, 0xa2f41f12, 0x43a71ed0,
    0x73f0bce6, 0x70a7e980, 0x243c6d75, 0xfdb71513, 0xa67d8a08, 0xb7e8f148,
    0xf7a644ee, 0x0f1837f2, 0x4b6694e0, 0xb7bbb3a8,
]

KEY_SEQ = bytes(range(16))


def self_test():
    bad = 0
    # the paper's appendix A example: key 00..0f, 15-byte message 00..0e
    if siphash(2, 4, KEY_SEQ, bytes(range(15))) != 0xa129ca6149be45e5:
        print("FAIL: SipHash-2-4 paper vector", file=sys.stderr)
        bad += 1
    for n, want in enumerate(SIP24):
        got = siphash(2, 4, KEY_SEQ, bytes(range(n)))
        if got != want:
            print("FAIL: SipHash-2-4 len %d: %016x != %016x" % (n, got, want),
                  file=sys.stderr)
            bad += 1
    for n, want in enumerate(SIP13_LO32):
        got = siphash(1, 3, KEY_SEQ, bytes(range(n))) & 0xffffffff
        if got != want:
            print("FAIL: SipHash-1-3 len %d: %08x != %08x" % (n, got, want),
                  file=sys.stderr)
            bad += 1
    return bad


# ---- Ringmaster's inputs ---------------------------------------------------

# Seeds as the 16 key bytes in order (the text form ringctl --seed takes).
SEEDS = [
    ("zero", bytes(16)),
    ("seq", KEY_SEQ),
    ("ones", b"\xff" * 16),
    ("text", b"ringmaster-seed!"),
]

# (label, family, src, dst, sport, dport, proto)
FLOWS = [
    ("v4_tcp", 4, "10.0.0.1", "192.168.1.10", 12345, 80, 6),
    ("v4_udp", 4, "172.16.5.4", "10.1.2.3", 53000, 53, 17),
    ("v4_max", 4, "255.255.255.255", "255.255.255.254", 65535, 65534, 17),
    ("v4_3tuple", 4, "10.0.0.1", "192.168.1.10", 0, 0, 6),
    ("v4_zero", 4, "0.0.0.0", "0.0.0.0", 0, 0, 0),
    ("v6_tcp", 6, "2001:db8::1", "2001:db8:0:1::80", 40000, 443, 6),
    ("v6_udp", 6, "fe80::1:2:3:4", "ff02::fb", 5353, 5353, 17),
    ("v6_3tuple", 6, "2001:db8::1", "2001:db8:0:1::80", 0, 0, 17),
    ("v6_mapped", 6, "::ffff:10.0.0.1", "::ffff:192.168.1.10", 12345, 80, 6),
]

# (name, vnode index)
VNODES = [
    ("a", 0),
    ("a", 1),
    ("node-01", 0),
    ("node-01", 999),
    ("backend.example-0123456789_abcd", 7),  # 31 chars, the maximum
    ("z", 0xffffffff),
]


def flow_bytes(family, src, dst, sport, dport, proto):
    af = socket.AF_INET if family == 4 else socket.AF_INET6
    return (socket.inet_pton(af, src) + socket.inet_pton(af, dst) +
            struct.pack(">HHB", sport, dport, proto))


def vnode_bytes(name, vnode):
    raw = name.encode()
    assert 1 <= len(raw) <= 31
    return raw + bytes(32 - len(raw)) + struct.pack("<I", vnode)


def flow_hash(key, *flow):
    return siphash(1, 3, key, flow_bytes(*flow)) & 0xffffffff


def vnode_point(key, name, vnode):
    return siphash(1, 3, key, vnode_bytes(name, vnode)) & 0xffffffff


def main():
    bad = self_test()
    if bad:
        print("siphash_ref: %d self-test failures" % bad, file=sys.stderr)
        return 1
    print("/* siphash_ref.py: SipHash-2-4 (65 vectors) and SipHash-1-3 "
          "(64 vectors) self-test ok */")

    print("\n/* full 64-bit SipHash-1-3, key 00..0f, message 00..(n-1) */")
    for n in (0, 1, 7, 8, 13, 15, 16, 36, 37, 63):
        print("\t{%2d, 0x%016xULL}," % (n, siphash(1, 3, KEY_SEQ,
                                                    bytes(range(n)))))

    print("\n/* seeds: key bytes -> k0, k1 */")
    for label, key in SEEDS:
        k0, k1 = struct.unpack("<QQ", key)
        print("\t/* %-5s %s */ {0x%016xULL, 0x%016xULL}," %
              (label, key.hex(), k0, k1))

    print("\n/* rm_flow_hash: one row per flow, one column per seed (%s) */" %
          ", ".join(s[0] for s in SEEDS))
    for flow in FLOWS:
        vals = [flow_hash(key, *flow[1:]) for _, key in SEEDS]
        print("\t/* %-9s */ {%s}," %
              (flow[0], ", ".join("0x%08x" % v for v in vals)))

    print("\n/* rm_vnode_point: one row per (name, vnode), one column per "
          "seed */")
    for name, vnode in VNODES:
        vals = [vnode_point(key, name, vnode) for _, key in SEEDS]
        print("\t/* %s/%u */ {%s}," %
              (name, vnode, ", ".join("0x%08x" % v for v in vals)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
