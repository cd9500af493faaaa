#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""What the QUIC end-to-end test's servers saw (tests/e2e/test_quic_ngtcp2.sh).

  quic_logs.py --out PREFIX [--bodies DIR] NODE=LOG[:FROM]...

Reads the event lines of rm_quic_server (tests/tools/rm_quic_server.c),
each node's log from line FROM on (0: all), and writes PREFIX.json (the
document below), PREFIX.sum ("KEY VALUE" lines: the counts the test
checks, cheap for a shell to read) and PREFIX.conns ("CONN NODE TO
STAYED" a connection: TO the client address its later packets came
from, STAYED 1 when none of them reached another node). The document:

  conns   one per connection accepted: its node, name, first client
          address (accept), the DCID of the client's Initial, every later client address (moves) and the
          DCID each move came with (move_dcids), its CIDs (the name and
          every NEW_CONNECTION_ID one), its requests (path, client, held),
          responses, close reason, and the strays: packets of one of its
          CIDs that reached another node (node, client, reset)
  strays  every stray line; misrouted: those that reached another node
          than their connection's, or whose connection no node saw
  bodies  with --bodies: for each request path /P whose response file
          DIR/*/dl/P exists, its text (gtlsclient --download)
"""

import glob
import json
import os
import sys


def fields(line):
    ev, _, rest = line.strip().partition(" ")
    kv = dict(p.split("=", 1) for p in rest.split() if "=" in p)
    return ev, kv


def summary(d):
    """The counts the test checks, by name."""
    conns, bodies = d["conns"], d.get("bodies", {})
    ip = lambda a: a.rsplit(":", 1)[0]  # noqa: E731
    sums = {
        "conns": len(conns),
        "handshakes": sum(c["handshake"] for c in conns),
        "misrouted": d["misrouted"],
        "closed_by_client": sum(c["close"] == "client" for c in conns),
        # answered with its own body: "NODE CONN PATH"
        "answered": sum(bodies.get(r["path"]) == "%s %s %s" % (
            c["node"], c["conn"], r["path"])
            for c in conns for r in c["requests"]),
        # moved after the handshake, then asked from the new address
        "moved_then_asked": sum(
            bool(c["moves"] and c["requests"]) and
            c["requests"][0]["client"] == c["moves"][-1] != c["accept"]
            for c in conns),
        "moved_same_ip": sum(
            bool(c["moves"]) and ip(c["moves"][-1]) == ip(c["accept"])
            for c in conns),
        # the first packet from the new address: a CID of the connection,
        # or one of those NEW_CONNECTION_ID gave
        "move_cid": sum(bool(c["move_dcids"]) and
                        c["move_dcids"][0] in c["cids"] for c in conns),
        "move_new_cid": sum(bool(c["move_dcids"]) and
                            c["move_dcids"][0] in c["cids"][1:]
                            for c in conns),
        "reset_elsewhere": sum(any(s["node"] != c["node"] and s["reset"]
                                   for s in c["strays"]) for c in conns),
    }
    for c in conns:
        for key in ("accept_ip " + ip(c["accept"]),
                    "asked_ip " + ip(c["requests"][0]["client"])
                    if c["requests"] else None, "node " + c["node"]):
            if key:
                sums[key] = sums.get(key, 0) + 1
    return sums


def conn_lines(d):
    for c in d["conns"]:
        away = [s for s in c["strays"] if s["node"] != c["node"]]
        to = c["moves"][-1] if c["moves"] else (
            away[0]["client"] if away else "-")
        yield "%s %s %s %d" % (c["conn"], c["node"], to, not away)


def main(argv):
    bodies_dir = out = None
    while len(argv) > 2 and argv[1] in ("--bodies", "--out"):
        if argv[1] == "--out":
            out = argv[2]
        else:
            bodies_dir = argv[2]
        argv = argv[2:]
    conns, by_cid, strays = {}, {}, []
    for arg in argv[1:]:
        node, _, spec = arg.partition("=")
        path, _, start = spec.partition(":")
        start = int(start or 0)
        try:
            lines = open(path).read().splitlines()[start:]
        except OSError:
            lines = []
        for line in lines:
            ev, kv = fields(line)
            name = kv.get("conn")
            if ev == "accept":
                conns[name] = {
                    "node": node, "conn": name, "accept": kv["client"],
                    "initial_dcid": kv["dcid"],
                    "moves": [], "move_dcids": [], "cids": [name],
                    "requests": [], "responses": 0, "close": None,
                    "handshake": False, "strays": [],
                }
                by_cid[name] = name
                continue
            if ev == "stray":
                strays.append({"node": node, "dcid": kv["dcid"],
                               "client": kv["client"],
                               "reset": kv["reset"] == "1"})
                continue
            c = conns.get(name)
            if c is None:
                continue
            if ev == "cid":
                c["cids"].append(kv["cid"])
                by_cid[kv["cid"]] = name
            elif ev == "handshake":
                c["handshake"] = True
            elif ev == "path":
                c["moves"].append(kv["client"])
                c["move_dcids"].append(kv["dcid"])
            elif ev == "request":
                c["requests"].append({"path": kv["path"],
                                      "client": kv["client"],
                                      "held": kv["held"] == "1"})
            elif ev == "response":
                c["responses"] += 1
            elif ev == "close":
                c["close"] = kv["why"]
    misrouted = 0
    for s in strays:
        name = by_cid.get(s["dcid"])
        if name is not None:
            conns[name]["strays"].append(s)
        if name is None or conns[name]["node"] != s["node"]:
            misrouted += 1
    doc = {"conns": sorted(conns.values(), key=lambda c: c["conn"]),
           "strays": strays, "misrouted": misrouted}
    if bodies_dir:
        doc["bodies"] = {}
        for f in glob.glob(os.path.join(bodies_dir, "*", "dl", "*")):
            doc["bodies"]["/" + os.path.basename(f)] = open(f).read().strip()
    if out is None:
        json.dump(doc, sys.stdout)
        print()
        return
    with open(out + ".json", "w") as f:
        json.dump(doc, f)
    with open(out + ".sum", "w") as f:
        for k, v in summary(doc).items():
            print(k, v, file=f)
    with open(out + ".conns", "w") as f:
        for line in conn_lines(doc):
            print(line, file=f)


if __name__ == "__main__":
    main(sys.argv)
