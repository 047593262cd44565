#!/usr/bin/env bash
# bench/dumbbell-cli.sh: eight clients uploading to one server through
# tbf rate 100mbit, the way a user runs it (by hand; not in CI). Needs root,
# iperf3 and python3.
#
#   bench/dumbbell-cli.sh [SECONDS] [STEP_MS] [ROUNDS]
#
# Each round: `wanlab up -d` a testbed of 8 clients and 1 server, client i
# behind access links of netem delay STEP·i ms each way (default 5: RTT 10
# to 80 ms); each client pings the server 100 times, 10 ms apart, while
# the path is idle (minimum RTT against the configured 2·STEP·i ms; a
# sparser ping finds the router's loops asleep and measures their
# wake-up too, docs/benchmarks.md); then `wanlab exec`
# starts an iperf3 server per client on s1 and every client's upload at
# once for SECONDS (default 10); then `wanlab status --json` gives each
# direction's release lateness and verdict since the testbed came up, and
# `wanlab down` removes it (also when interrupted). The verdict allows the
# smaller of 1 ms and a tenth of the smallest one-way delay: 0.5 ms with
# STEP 5, 1 ms with STEP 10. bench/dumbbell.sh measures the router alone
# (routerbench, iperf3 started from the router's own process).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
step=${2:-5}
rounds=${3:-1}
for arg in "SECONDS=$secs" "STEP_MS=$step" "ROUNDS=$rounds"; do
	if ! [[ ${arg#*=} =~ ^[1-9][0-9]{0,3}$ ]]; then
		echo "bench/dumbbell-cli.sh: ${arg%%=*} ${arg#*=}: give a whole number from 1 to 9999" >&2
		exit 2
	fi
done
tmp=$(mktemp -d)
name=wl-dbcli-$$
wl=$tmp/wanlab
cleanup() {
	"$wl" down "$name" >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
go build -o "$wl" ./cmd/wanlab

echo "# $(date -u +%FT%TZ) $(uname -r), $(nproc) CPUs, ${secs}s uploads, access links ${step}·i ms, load $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq "$rounds"); do
	access=()
	for i in 1 2 3 4 5 6 7 8; do
		access+=(--access-up "c$i=netem delay $((step * i))ms" --access-down "c$i=netem delay $((step * i))ms")
	done
	"$wl" up --name "$name" --clients 8 --up "tbf rate 100mbit burst 30kb latency 20ms" "${access[@]}" -d >/dev/null
	"$wl" status "$name" --json >"$tmp/before.json"
	sa=$(python3 -c 'import json,sys; print([h["addr4"] for h in json.load(open(sys.argv[1]))["hosts"] if h["name"] == "server"][0])' "$tmp/before.json")
	for i in 1 2 3 4 5 6 7 8; do
		"$wl" exec "$name" --on "c$i" -- ping -n -q -c 100 -i 0.01 "$sa" >"$tmp/ping$i.txt" &
	done
	wait
	for i in 1 2 3 4 5 6 7 8; do
		"$wl" exec "$name" --on s1 -- iperf3 -s -1 -p $((5300 + i)) >/dev/null 2>&1 &
		servers[i]=$!
	done
	sleep 1
	for i in 1 2 3 4 5 6 7 8; do
		"$wl" exec "$name" --on "c$i" -- iperf3 -c "$sa" -p $((5300 + i)) -t "$secs" -J >"$tmp/iperf$i.json" &
		clients[i]=$!
	done
	for i in 1 2 3 4 5 6 7 8; do wait "${clients[i]}"; done
	for i in 1 2 3 4 5 6 7 8; do wait "${servers[i]}" || true; done
	"$wl" status "$name" --json >"$tmp/after.json"
	"$wl" down "$name" >/dev/null
	python3 - "$tmp" "$step" "$round" <<'EOF'
import json, re, sys
tmp, step, rnd = sys.argv[1], int(sys.argv[2]), sys.argv[3]
total = 0.0
cells = []
for i in range(1, 9):
    want = 2 * step * i
    m = re.search(r"= ([0-9.]+)/", open(f"{tmp}/ping{i}.txt").read())
    got = float(m.group(1))
    mbit = json.load(open(f"{tmp}/iperf{i}.json"))["end"]["sum_received"]["bits_per_second"] / 1e6
    total += mbit
    cells.append(f"c{i} {want}ms min {got:.2f} ({100 * (got - want) / want:+.2f}%) {mbit:.1f}Mbit/s")
print(f"round {rnd}: " + "; ".join(cells) + f"; sum {total:.1f} Mbit/s")
d = json.load(open(f"{tmp}/after.json"))
for k in ("up", "down"):
    l, v = d[k]["lateness"], d[k]["verdict"]
    print(f"round {rnd}: {k} lateness p50 {l['p50_ns'] / 1e3:.1f} µs p99 {l['p99_ns'] / 1e3:.1f} µs max {l['max_ns'] / 1e6:.2f} ms, "
          f"tolerance {v['tolerance_ns'] / 1e3:.0f} µs, faithful={v['faithful']}, nice {d[k]['loop']['nice']}")
EOF
	sleep 3
done
