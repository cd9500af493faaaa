#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# etcd-certs.sh DIR ADDRESS...: a CA and the certificates a fleet's etcd
# with client TLS needs, in DIR (openssl; P-256 keys, valid DAYS, 365):
#   ca.pem ca.key            the CA (keep ca.key offline in production)
#   server.pem server.key    etcd's --cert-file/--key-file: subjectAltName
#                            = every ADDRESS (IPs or DNS names the
#                            directors use in --etcd URL)
#   client.pem client.key    the directors' and operators' --cert/--tls-key
# Two things etcd 3.4 insists on, found the hard way:
#   - its HTTP/JSON gateway (what ringsync and ringctl publish talk to)
#     dials etcd itself with the server certificate, so under
#     --client-cert-auth that certificate must allow clientAuth too;
#   - with auth enabled, the gateway refuses client certificates that
#     carry a CommonName: the client certificate has none (/O=...).
set -euo pipefail

[ $# -ge 2 ] || { echo "usage: $0 DIR ADDRESS..." >&2; exit 2; }
dir=$1
shift
days=${DAYS:-365}
san=
for a in "$@"; do
	if [[ $a =~ ^[0-9.]+$ || $a == *:* ]]; then
		san="$san,IP:$a"
	else
		san="$san,DNS:$a"
	fi
done
mkdir -p "$dir"
cd "$dir"
umask 077

# sign NAME SUBJECT EXTENSIONS
sign()
{
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-subj "$2" -keyout "$1.key" -out "$1.csr" 2>/dev/null
	printf '%b\n' "$3" >"$1.ext"
	openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key \
		-CAcreateserial -days "$days" -extfile "$1.ext" \
		-out "$1.pem" 2>/dev/null
	rm -f "$1.csr" "$1.ext"
}

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	-days "$days" -subj "/CN=ringmaster fleet etcd CA" -keyout ca.key \
	-out ca.pem 2>/dev/null
sign server "/CN=etcd" \
	"subjectAltName=${san#,}\nextendedKeyUsage=serverAuth,clientAuth"
sign client "/O=ringmaster fleet" "extendedKeyUsage=clientAuth"
rm -f ca.srl
echo "etcd-certs: ca.pem, server.pem/.key (for ${san#,}), client.pem/.key in $dir"
