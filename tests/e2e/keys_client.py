#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Clients of the keyed-service end-to-end tests (memcached, DNS).

Every request leaves from a fresh UDP socket, so from a port of the
kernel's choosing: many source ports, as a fleet of clients would use.
Requests go out in batches; one unanswered is resent (from a new port) up
to --retries times. Bounded in count and time.

  mc-udp VIP PORT KEYS --op set|get|getset   memcached over UDP; prints
      JSON {"sent", "answered", "stored", "hits", "misses", "filled"};
      getset = read, and on a miss store (cache-aside); --out FILE lists
      "KEY hit|miss|stored" per key
  mc-held ADDR PORT KEYS                     memcached over TCP: the keys
      this server holds, one a line
  mc-flush ADDR PORT                         flush_all over TCP
  dns-auth ADDR ZONE LOG MAX_SECONDS         a minimal authoritative
      server for ZONE (A 198.18.77.77, TTL 3600) that appends "NAME
      SOURCE" to LOG for every query
  dns VIP NAMES --repeat N [--mixed-case]    A queries for every name N
      times (interleaved; each query's letters in random case with
      --mixed-case); prints JSON {"sent", "answered", "noerror"}
"""

import json
import random
import select
import socket
import struct
import sys
import time

BATCH = 200
TIMEOUT = 1.0
DEADLINE_S = 120  # a run never takes longer than this


def family(addr):
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


def udp_exchange(vip, port, reqs, retries, parse):
    """Send reqs (list of (key, bytes)), return {key: parse(reply)}."""
    out = {}
    pending = list(reqs)
    end = time.monotonic() + DEADLINE_S
    sent = 0
    for attempt in range(retries + 1):
        missed = []
        for i in range(0, len(pending), BATCH):
            if time.monotonic() > end:
                missed.extend(pending[i:])
                continue
            socks = {}
            for key, data in pending[i:i + BATCH]:
                s = socket.socket(family(vip), socket.SOCK_DGRAM)
                s.setblocking(False)
                s.sendto(data, (vip, port))
                sent += 1
                socks[s.fileno()] = (s, key, data)
            wait_end = time.monotonic() + TIMEOUT
            while socks and time.monotonic() < wait_end:
                r, _, _ = select.select(list(socks), [], [],
                                        max(0, wait_end - time.monotonic()))
                for fd in r:
                    s, key, data = socks.pop(fd)
                    try:
                        reply = s.recv(65536)
                        out[key] = parse(reply)
                    except OSError:
                        missed.append((key, data))
                    s.close()
            for s, key, data in socks.values():
                missed.append((key, data))
                s.close()
        pending = missed
        if not pending:
            break
    return out, sent


def mc_frame(rid, body):
    return struct.pack("!HHHH", rid & 0xffff, 0, 1, 0) + body


def mc_udp(vip, port, keys, op, retries, out_file):
    stats = {"sent": 0, "answered": 0, "stored": 0, "hits": 0, "misses": 0,
             "filled": 0}
    result = {}

    def set_reqs(ks):
        return [(k, mc_frame(n, b"set %s 0 0 %d\r\n%s\r\n" %
                             (k.encode(), len(k), k.encode())))
                for n, k in enumerate(ks)]

    def parse_set(reply):
        return reply[8:].startswith(b"STORED")

    def parse_get(reply):
        body = reply[8:]
        if body.startswith(b"VALUE "):
            return "hit"
        if body.startswith(b"END"):
            return "miss"
        return "error"

    def do_set(ks):
        got, sent = udp_exchange(vip, port, set_reqs(ks), retries, parse_set)
        stats["sent"] += sent
        stats["answered"] += len(got)
        return [k for k, ok in got.items() if ok]

    if op == "set":
        for k in do_set(keys):
            result[k] = "stored"
            stats["stored"] += 1
    else:
        reqs = [(k, mc_frame(n, b"get %s\r\n" % k.encode()))
                for n, k in enumerate(keys)]
        got, sent = udp_exchange(vip, port, reqs, retries, parse_get)
        stats["sent"] += sent
        stats["answered"] += len(got)
        for k, v in got.items():
            result[k] = v
            if v == "hit":
                stats["hits"] += 1
            elif v == "miss":
                stats["misses"] += 1
        if op == "getset":
            miss = [k for k, v in got.items() if v == "miss"]
            stats["filled"] = len(do_set(miss))
    if out_file:
        with open(out_file, "w") as f:
            for k in keys:
                f.write("%s %s\n" % (k, result.get(k, "none")))
    print(json.dumps(stats))
    return 0


def tcp_lines(addr, port, payload, want_end):
    s = socket.create_connection((addr, port), timeout=5)
    s.sendall(payload)
    buf = b""
    while not buf.endswith(want_end):
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    s.close()
    return buf


def mc_held(addr, port, keys):
    for i in range(0, len(keys), 100):
        batch = keys[i:i + 100]
        reply = tcp_lines(addr, port,
                          b"get " + " ".join(batch).encode() + b"\r\n",
                          b"END\r\n")
        for line in reply.split(b"\r\n"):
            if line.startswith(b"VALUE "):
                print(line.split()[1].decode())
    return 0


def mc_flush(addr, port):
    reply = tcp_lines(addr, port, b"flush_all\r\n", b"\r\n")
    return 0 if reply.startswith(b"OK") else 1


def dns_query(qid, name):
    q = struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for label in name.rstrip(".").split("."):
        q += bytes([len(label)]) + label.encode()
    return q + b"\x00" + struct.pack("!HH", 1, 1)


def dns(vip, names, repeat, retries, mixed):
    rnd = random.Random(53)
    reqs = []
    for r in range(repeat):
        for n, name in enumerate(names):
            if mixed:
                name = "".join(c.upper() if rnd.random() < 0.5 else c
                               for c in name)
            reqs.append(((r, name), dns_query((r * 7919 + n) & 0xffff, name)))

    def parse(reply):
        return len(reply) >= 12 and (reply[3] & 0x0f) == 0 and \
            struct.unpack("!H", reply[6:8])[0] > 0

    got, sent = udp_exchange(vip, 53, reqs, retries, parse)
    print(json.dumps({"sent": sent, "answered": len(got),
                      "noerror": sum(1 for v in got.values() if v)}))
    return 0


def dns_auth(addr, zone, log, max_seconds):
    """Authoritative for zone: an A record for every name in it, TTL 3600;
    REFUSED for anything else. Appends "name source" per query to log."""
    zone = zone.lower().rstrip(".").encode()
    s = socket.socket(family(addr), socket.SOCK_DGRAM)
    s.bind((addr, 53))
    s.settimeout(0.5)
    end = time.monotonic() + max_seconds
    with open(log, "a", buffering=1) as f:
        while time.monotonic() < end:
            try:
                q, src = s.recvfrom(512)
            except socket.timeout:
                continue
            i, labels = 12, []
            while i < len(q) and q[i] and len(labels) < 128:
                labels.append(q[i + 1:i + 1 + q[i]])
                i += 1 + q[i]
            qend = i + 5
            if len(q) < 17 or qend > len(q):
                continue
            name = b".".join(labels).lower()
            ok = name == zone or name.endswith(b"." + zone)
            f.write("%s %s\n" % (name.decode(errors="replace"), src[0]))
            # QR AA, RD copied, RA; NOERROR with one answer or REFUSED
            flags = 0x8480 | (q[2] & 1) << 8 | (0 if ok else 5)
            hdr = q[:2] + struct.pack("!HHHHH", flags, 1, 1 if ok else 0,
                                      0, 0)
            ans = (struct.pack("!HHHIH", 0xc00c, 1, 1, 3600, 4) +
                   bytes([198, 18, 77, 77])) if ok else b""
            s.sendto(hdr + q[12:qend] + ans, src)
    return 0


def read_keys(path):
    with open(path) as f:
        return [line.strip() for line in f if line.strip()]


def main(argv):
    args = argv[1:]
    retries = 3
    out_file = None
    op = "get"
    repeat = 1
    mixed = False
    rest = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--retries":
            retries = int(args[i + 1])
            i += 2
        elif a == "--out":
            out_file = args[i + 1]
            i += 2
        elif a == "--op":
            op = args[i + 1]
            i += 2
        elif a == "--mixed-case":
            mixed = True
            i += 1
        elif a == "--repeat":
            repeat = int(args[i + 1])
            i += 2
        else:
            rest.append(a)
            i += 1
    if not rest:
        print(__doc__, file=sys.stderr)
        return 2
    cmd = rest[0]
    if cmd == "mc-udp" and len(rest) == 4:
        return mc_udp(rest[1], int(rest[2]), read_keys(rest[3]), op,
                      retries, out_file)
    if cmd == "mc-held" and len(rest) == 4:
        return mc_held(rest[1], int(rest[2]), read_keys(rest[3]))
    if cmd == "mc-flush" and len(rest) == 3:
        return mc_flush(rest[1], int(rest[2]))
    if cmd == "dns-auth" and len(rest) == 5:
        return dns_auth(rest[1], rest[2], rest[3], int(rest[4]))
    if cmd == "dns" and len(rest) == 3:
        return dns(rest[1], read_keys(rest[2]), repeat, retries, mixed)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
