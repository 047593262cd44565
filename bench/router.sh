#!/usr/bin/env bash
# bench/router.sh: throughput and timing fidelity of wanlab's router, by hand
# (not in CI). Needs root, iperf3 (apt-get install -y iperf3) and taskset.
#
#   bench/router.sh [SECONDS]
#
# Every run creates two fresh wl- namespaces and removes them (routerbench
# uses netns.Testbed, which also clears what an interrupted run left).
#  1. TCP over a plain veth pair between the namespaces: the baseline.
#  2. TCP through the router (TUNs of kind vnet), empty chain.
#  3. TCP through the router, netem delay 10ms each way, as fast as it
#     goes and paced at 1 Gbit/s (iperf3 -b 1G).
#  4. UDP at 1 Gbit/s through netem delay 10ms limit 10000: release
#     lateness, with normal scheduling, then with iperf3 pinned to CPU 0
#     and the router to CPU 1, then that and SCHED_FIFO, then that with
#     iperf3 --pacing-timer 100 (bursts every 100 µs instead of 1 ms).
#  5. The machine's scheduling-latency floor: wake-up delays of a probe
#     thread (clock_nanosleep, ppoll; SCHED_OTHER and SCHED_FIFO) alone,
#     and beside the router under the UDP load.
#  6. The in-memory loop benchmark (fake devices, allocations per packet).
# ring_drops are the kernel's drops in the ring in front of the router
# (up,down): packets the router did not read in time.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-5}
bin=$(mktemp -d)/wl-routerbench
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./bench/routerbench

field() { sed -n "s/.*[ ]$1=\([^ ]*\).*/\1/p" <<<"$2"; }

echo "# $(date -u +%FT%TZ) $(uname -r), $(nproc) CPUs, ${secs}s per run"
veth=$("$bin" veth -t "$secs")
base=$(field gbps "$veth")
printf '%-44s %8s %7s %10s %10s %11s\n' run Gbit/s ratio p50_us p99_us ring_drops
printf '%-44s %8s %7s\n' "tcp veth (baseline)" "$base" 1.00
row() {
	local name=$1 out=$2
	local g; g=$(field gbps "$out")
	printf '%-44s %8s %7.2f %10s %10s %11s\n' "$name" "$g" "$(echo "$g / $base" | bc -l)" \
		"$(field up_p50_us "$out")" "$(field up_p99_us "$out")" "$(field ring_drops "$out")"
	echo "    $out" >&2
}
row "tcp router, empty chain" "$("$bin" router -t "$secs")"
row "tcp router, netem delay 10ms" "$("$bin" router -t "$secs" -chain 'netem delay 10ms')"
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
go test ./router -run '^$' -bench BenchmarkLoop -benchtime=20000x | grep Benchmark
