#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# etcd-auth.sh KEY DIR [etcdctl options]: turn on etcd's authentication
# for a fleet whose configuration lives at KEY (etcdctl, from Debian's
# etcd-client package, as the passwords in DIR say):
#   root      (DIR/root.pw)      etcd's administrator, needed to enable auth
#   director  (DIR/director.pw)  role fleet-read: read KEY (ringsync)
#   operator  (DIR/operator.pw)  role fleet-write: read and write KEY
#                                (ringctl publish)
# The etcdctl options reach etcd before auth is on, e.g.
#   --endpoints https://198.18.199.1:2379 --cacert DIR/ca.pem
#   --cert DIR/client.pem --key DIR/client.key
set -euo pipefail

[ $# -ge 2 ] || { echo "usage: $0 KEY DIR [etcdctl options]" >&2; exit 2; }
key=$1 dir=$2
shift 2
ectl()
{
	etcdctl "$@" "${opts[@]}"
}
opts=("$@")
pw()
{
	head -n 1 "$dir/$1.pw"
}

ectl user add root --new-user-password "$(pw root)"
ectl role add fleet-read
ectl role grant-permission fleet-read read "$key"
ectl role add fleet-write
ectl role grant-permission fleet-write readwrite "$key"
ectl user add director --new-user-password "$(pw director)"
ectl user grant-role director fleet-read
ectl user add operator --new-user-password "$(pw operator)"
ectl user grant-role operator fleet-write
ectl auth enable
