#!/usr/bin/env bash
# bench/router.sh: throughput and timing fidelity of wanlab's router, by hand
# (not in CI). Needs root, iperf3 (apt-get install -y iperf3), taskset and bc.
#
#   bench/router.sh [SECONDS]
#
# Every run creates two fresh wl- namespaces and removes them (routerbench
# uses netns.Testbed, which also clears what an interrupted run left).
#  1. TCP over a plain veth pair between the namespaces: the baseline every
#     other TCP row is a ratio to.
#  2. TCP through the router (TUNs of kind vnet): an empty chain, and chains
#     that decide per packet (loss, jitter, a shaper that never limits with
#     fq_codel, fq_codel alone), each with the release lateness (p50, p99
#     of the up direction), how busy the up loop was, and the fidelity
#     verdict's causes; the jittered chain also with -granularity gso.
#  3. Both data planes through testbeds as `wanlab up` builds them (package
#     lab, TUNs of kind vnet or veths read through packet sockets): TCP
#     through the empty chain and the three per-packet chains, and UDP at
#     1 Gbit/s through a 10 ms delay, each with its lateness.
#  4. TCP paced at 1 Gbit/s, and UDP at 1 Gbit/s through netem delay 10ms
#     limit 10000: release lateness, with normal scheduling, then with
#     iperf3 pinned to CPU 0 and the router to CPU 1, then that and
#     SCHED_FIFO, then that with iperf3 --pacing-timer 100.
#  5. The machine's scheduling-latency floor: wake-up delays of a probe
#     thread (clock_nanosleep, ppoll; SCHED_OTHER and SCHED_FIFO) alone,
#     and beside the router under the UDP load.
#  6. The in-memory loop benchmark (fake devices, allocations per packet).
# ring_drops are the kernel's drops in the ring in front of the router
# (up,down): packets the router did not read in time.
# The router carrying many hosts (a dumbbell) has its own script,
# bench/dumbbell.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-5}
bin=$(mktemp -d)/wl-routerbench
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./bench/routerbench

field() { sed -n "s/.*[ ]$1=\([^ ]*\).*/\1/p" <<<"$2"; }

echo "# $(date -u +%FT%TZ) $(uname -r), $(nproc) CPUs, ${secs}s per run, load $(cut -d' ' -f1-3 /proc/loadavg)"
veth=$("$bin" veth -t "$secs")
base=$(field gbps "$veth")
printf '%-78s %8s %6s %9s %9s %5s %11s %s\n' run Gbit/s ratio p50_us p99_us busy ring_drops causes
printf '%-78s %8s %6s\n' "tcp veth (baseline)" "$base" 1.00
row() {
	local name=$1 out=$2
	local g; g=$(field gbps "$out")
	printf '%-78s %8s %6.2f %9s %9s %4s%% %11s %s\n' "$name" "$g" "$(echo "$g / $base" | bc -l)" \
		"$(field up_p50_us "$out")" "$(field up_p99_us "$out")" "$(field up_busy_pct "$out")" \
		"$(field ring_drops "$out")" "$(field up_causes "$out")"
	echo "    $out" >&2
}
row "tcp router, empty chain" "$("$bin" router -t "$secs")"
for chain in \
	'netem delay 10ms limit 100000' \
	'netem delay 10ms loss 0.01% limit 100000' \
	'netem delay 10ms 1ms limit 100000' \
	'netem delay 10ms limit 100000; tbf rate 20gbit burst 4mb latency 50ms; fq_codel' \
	'netem delay 10ms limit 100000; tbf rate 5gbit burst 1m latency 50ms; fq_codel' \
	'fq_codel'; do
	row "tcp $chain" "$("$bin" router -t "$secs" -chain "$chain")"
done
row "tcp netem delay 10ms 1ms limit 100000, granularity gso" \
	"$("$bin" router -t "$secs" -chain 'netem delay 10ms 1ms limit 100000' -granularity gso)"
echo
echo "# the two data planes, each as \`wanlab up\` builds it (lab mode): TUNs, or veths read through packet sockets"
for plane in tun packet; do
	for chain in '' \
		'netem delay 10ms loss 0.01% limit 100000' \
		'netem delay 10ms 1ms limit 100000' \
		'netem delay 10ms limit 100000; tbf rate 20gbit burst 4mb latency 50ms; fq_codel'; do
		row "tcp $plane: ${chain:-empty chain}" "$("$bin" lab -dataplane "$plane" -t "$secs" -chain "$chain")"
	done
	row "udp 1G $plane: netem delay 10ms" "$("$bin" lab -dataplane "$plane" -t "$secs" -chain 'netem delay 10ms limit 10000' -udp 1G)"
done

echo
lat='netem delay 10ms limit 10000'
row "tcp 1G router, netem delay 10ms" "$("$bin" router -t "$secs" -chain 'netem delay 10ms' -b 1G)"
row "udp 1G router, delay 10ms" "$("$bin" router -t "$secs" -chain "$lat" -udp 1G)"
row "udp 1G router, delay 10ms, pinned" "$(taskset -c 1 "$bin" router -t "$secs" -chain "$lat" -udp 1G -iperf-cpus 0)"
row "udp 1G router, delay 10ms, pinned, fifo 10" "$(taskset -c 1 "$bin" router -t "$secs" -chain "$lat" -udp 1G -iperf-cpus 0 -rt 10)"
row "udp 1G, pinned, fifo 10, pacing 100us" "$(taskset -c 1 "$bin" router -t "$secs" -chain "$lat" -udp 1G -iperf-cpus 0 -rt 10 -pacing-us 100)"

echo
echo "# wake-up probe (µs late): idle, under load, pinned under load"
"$bin" probe -t 3 -rt 10
"$bin" router -t "$secs" -chain "$lat" -udp 1G -probe | grep -o 'up_p99_us=[^ ]*\|probe.*'
taskset -c 1 "$bin" router -t "$secs" -chain "$lat" -udp 1G -iperf-cpus 0 -rt 10 -probe | grep -o 'up_p99_us=[^ ]*\|probe.*'

echo
go test ./router -run '^$' -bench BenchmarkLoop -benchtime=20000x -benchmem | grep Benchmark
