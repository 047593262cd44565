#!/usr/bin/env bash
# bench/soak.sh: wanlab's router under load for a long time (needs root).
#
#   bench/soak.sh [DURATION] [soak flags...]     (default 30m; CI runs 60s)
#
# Two fresh wl- namespaces joined by the router over vnet TUNs, the chain
# "netem delay 20ms limit 20000; tbf rate 100mbit burst 64k latency 50ms;
# fq_codel" in both directions, and 1,000 concurrent flows from the client
# to the server: 100 bulk TCP connections (GSO super-packets, which cross
# the chain whole, decided segment by segment) and 900 UDP flows sending
# 20,000 datagrams/s together. Every 10 s (2 s for runs under 5 minutes)
# it records the router process's resident memory, live heap, goroutines,
# open files and threads, and the router's counters, as CSV on stderr and
# in soak-<time>.csv under ${SOAK_DIR:-/tmp}. At the end it drains the path
# and checks that the process stayed flat after the warm-up and that every
# direction balances (segments in + duplicates = out + drops + queued,
# nothing left queued, the flows adding up, every UDP datagram the load
# sent counted by the router or dropped in the kernel's ring in front of
# it); it prints the verdict as JSON and exits 1 if a check fails. See
# bench/soak/main.go.
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-30m}
shift || true
every=10s
case "$dur" in
*s) [ "${dur%s}" -lt 300 ] && every=2s ;;
*m) [ "${dur%m}" -lt 5 ] && every=2s ;;
esac
bin=$(mktemp -d)/wl-soak
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./bench/soak
csv=${SOAK_DIR:-/tmp}/soak-$(date -u +%Y%m%dT%H%M%SZ).csv
echo "# $(date -u +%FT%TZ) $(uname -r), $(nproc) CPUs, $dur, samples in $csv" >&2
"$bin" -d "$dur" -every "$every" -csv "$csv" -chain "netem delay 20ms limit 20000; tbf rate 100mbit burst 64k latency 50ms; fq_codel" -pps 20000 "$@"
