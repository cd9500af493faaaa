#!/usr/bin/env bash
# Install what Ringmaster needs to build, test, benchmark and demo, from
# Debian 12 packages. Idempotent: installs only what is missing.
set -euo pipefail

pkgs=(
	clang llvm gcc make pkg-config
	libbpf-dev libxdp-dev bpftool libelf-dev zlib1g-dev linux-libc-dev
	libcmocka-dev
	libcurl4-openssl-dev libjson-c-dev
	bird2 etcd-server etcd-client curl openssl # fleet; etcd TLS/auth test (etcdctl, certificates)
	clang-tools cppcheck libclang-rt-14-dev # make analyze, make fuzz (libFuzzer)
	iproute2 ethtool iputils-ping
	python3
	shellcheck # tests/static/test_shellcheck.sh
	# man pages (groff -ww, man --warnings), completion, systemd-analyze
	# verify, and setpriv/strings in the install test
	groff-base man-db bash-completion systemd util-linux binutils
	memcached dnsmasq-base
	libmemcached-dev # test_ketama: libmemcached's ketama, the reference
	# metrics: ringexport's HTTP server; promtool and a Prometheus server
	# in test_metrics; ringctl top driven in tmux (test_top); sysctl
	libmicrohttpd-dev prometheus tmux procps
	# make test on a busy machine (stress-ng, docs/testing.md); make bench's
	# plots (gnuplot, no X)
	stress-ng gnuplot-nox
	# second chance: the spoofed ACK flood (test_second_chance), each
	# director's outer source seen on the wire (test_fleet_local)
	hping3 tcpdump
	# make deb and test_deb (dpkg-buildpackage, dh, lintian); test_upgrade
	# builds the older release from git
	dpkg-dev debhelper lintian git
	# QUIC end to end (test_quic_ngtcp2): the test server on ngtcp2,
	# nghttp3 and GnuTLS; the stock client and server
	libngtcp2-dev libngtcp2-crypto-gnutls-dev libnghttp3-dev libgnutls28-dev
	ngtcp2-client ngtcp2-server
	# QUIC-LB encrypted CIDs in userspace (ringctl lookup --cid, quic-cid)
	nettle-dev
)

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all ${#pkgs[@]} packages present"
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing ${missing[*]}; run this as root: make deps (or: sudo make deps)" >&2
	exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
