#!/usr/bin/env bash
# bench/dumbbell.sh: the router carrying a dumbbell of many hosts, by hand
# (not in CI). Needs root, iperf3 (apt-get install -y iperf3) and bc.
#
#   bench/dumbbell.sh [SECONDS] [BEFORE]
#
# Every run builds its testbed through package lab (wl- namespaces, removed
# afterwards; an interrupted run's are cleared by the next).
#  1. 8 clients, 1 server: client i behind access links of netem delay
#     10·i ms each way (RTT 20 to 160 ms), all through tbf rate 100mbit up;
#     then 5·i ms (RTT 10 to 80 ms), whose 5 ms link halves the lateness
#     the verdict allows (a tenth of the smallest one-way delay).
#     Each client uploads over TCP (iperf3) while an ICMP echo times its RTT,
#     2 s idle first, then under the load. Per host: configured RTT, the
#     probes' minimum idle and its error, minimum and median under load,
#     goodput; then the goodputs' sum against the rate, each direction's
#     lateness and verdict, each loop's CPU and busy share, sleeps and
#     spinning passes, and the up loop's CPU per Gbit carried. Then the
#     same again with the wake-up delays of probe threads beside the
#     router (the machine's scheduling-latency floor under the same load;
#     see bench/router.sh).
#  2. The cost of a port: 1 Gbit/s of TCP in all, split over 1, 2, 4 and 8
#     clients through an empty bottleneck, and from the classic two hosts
#     (first and last, to show the drift): the up loop's busy ns per packet
#     and its ratios.
#  3. With BEFORE (a commit, e.g. the one before the router carried many
#     hosts), two-host runs of routerbench built at BEFORE and at the work
#     tree, interleaved: TCP over veth (the baseline), TCP through the
#     router with an empty chain and with netem delay 10ms 1ms, TCP through
#     a lab-built testbed, UDP at 1 Gbit/s through delay 10ms: ratio to
#     veth and lateness, to show the two-host path unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-5}
before=${2:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin=$tmp/wl-routerbench
go build -o "$bin" ./bench/routerbench

echo "# $(date -u +%FT%TZ) $(uname -r), $(nproc) CPUs, ${secs}s per run, load $(cut -d' ' -f1-3 /proc/loadavg)"
"$bin" dumbbell -clients 8 -delays 10,20,30,40,50,60,70,80 -rate 100mbit -t "$secs"
echo
echo "# access links of 5 to 40 ms: the verdict allows a tenth of the smallest, 0.5 ms"
"$bin" dumbbell -clients 8 -delays 5,10,15,20,25,30,35,40 -rate 100mbit -t "$secs"
echo
echo "# the same with the wake-up probes beside it (their threads load the machine too: this run's verdict is not the measure)"
"$bin" dumbbell -clients 8 -delays 5,10,15,20,25,30,35,40 -rate 100mbit -t "$secs" -probe
echo
"$bin" ports -load 1G -counts 1,2,4,8 -t "$secs"
[ -n "$before" ] || exit 0

echo
old=$tmp/wl-routerbench-before
mkdir "$tmp/src"
git archive "$before" | tar -x -C "$tmp/src"
(cd "$tmp/src" && go build -o "$old" ./bench/routerbench)
field() { sed -n "s/.*[ ]$1=\([^ ]*\).*/\1/p" <<<"$2"; }
echo "# two hosts, routerbench at $(git rev-parse --short "$before") (before) and at the work tree (after), interleaved"
printf '%-44s %-6s %8s %6s %9s %9s %s\n' run build Gbit/s ratio p50_us p99_us causes
for rep in 1 2; do
	for b in before after; do
		exe=$bin
		[ "$b" = before ] && exe=$old
		base=$(field gbps "$("$exe" veth -t "$secs")")
		printf '%-44s %-6s %8s %6s\n' "tcp veth" "$b" "$base" 1.00
		while IFS='|' read -r name args; do
			# A lab run of routerbench before 90335f0 may exit 130 after
			# its line (its interrupt handler fired when it returned):
			# the line counts.
			out=$(eval "\"$exe\" $args -t $secs") || true
			g=$(field gbps "$out")
			printf '%-44s %-6s %8s %6.2f %9s %9s %s\n' "$name" "$b" "$g" "$(echo "$g / $base" | bc -l)" \
				"$(field up_p50_us "$out")" "$(field up_p99_us "$out")" "$(field up_causes "$out")"
		done <<'RUNS'
tcp router, empty chain|router
tcp router, netem delay 10ms 1ms|router -chain 'netem delay 10ms 1ms limit 100000'
tcp lab tun, empty chain|lab -dataplane tun
udp 1G router, netem delay 10ms|router -chain 'netem delay 10ms limit 10000' -udp 1G
RUNS
	done
done
