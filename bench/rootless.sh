#!/usr/bin/env bash
# bench/rootless.sh: root against an ordinary user on the same paths, by
# hand (not in CI). Run it as root: it runs each rootless side as uid
# ${WL_BENCH_UID:-64101}, a uid no account has, through setpriv(1). Needs
# iperf3, jq and bc.
#
#   bench/rootless.sh [ROUNDS] [SECONDS]
#
# Each round runs the root side, then the rootless side, so that drift of
# the machine falls on both alike:
#  1. routerbench (bench/router.sh's): TCP over a plain veth pair, then
#     through the router with an empty chain and with netem delay 10ms:
#     the router's ratio to the veth of the same mode, and its lateness.
#  2. wanlab run ping, then tcp_upload, through netem delay 20ms and tbf
#     rate 10mbit (down: netem delay 20ms), SECONDS each: the ICMP RTT's
#     mean without load, the goodput's mean, and the ICMP RTT's mean under
#     the load (which the TCP flow's sawtooth moves by several ms from run
#     to run, root or not).
# The last lines give each figure's mean over the rounds per mode and the
# rootless/root ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
secs=${2:-10}
uid=${WL_BENCH_UID:-64101}
[ "$(id -u)" = 0 ] || { echo "run bench/rootless.sh as root: it runs the rootless side as uid $uid" >&2; exit 2; }
tmp=$(mktemp -d /tmp/wl-bench-XXXXXX)
chmod 755 "$tmp"
home=$tmp/home
mkdir "$home" && chown "$uid:$uid" "$home"
cleanup() {
	# Only the bench's own uid's processes: no account has it.
	for p in $(ps -u "$uid" -o pid= 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
	rm -rf "$tmp" "/tmp/wanlab-$uid"
}
trap cleanup EXIT
go build -o "$tmp/wl-routerbench" ./bench/routerbench
go build -o "$tmp/wanlab" ./cmd/wanlab
chmod 755 "$tmp"/wl-routerbench "$tmp"/wanlab

as_user() { setpriv --reuid="$uid" --regid="$uid" --clear-groups env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$home" "$@"; }
field() { sed -n "s/.*[ ]$1=\([^ ]*\).*/\1/p" <<<"$2"; }
series_mean() { "$tmp/wanlab" show --json "$1" | jq -r --arg n "$2" '[.. | objects | select(.name? == $n) | .summary.mean][0]'; }

echo "# $(date -u +%FT%TZ) $(uname -r), $(nproc) CPUs, $rounds rounds, ${secs}s per run, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-5s %-9s %-46s %10s %8s %8s\n' round mode run figure ratio p99_us
results=$tmp/figures
: >"$results"
record() { # round mode name value [p99]
	printf '%-5s %-9s %-46s %10s %8s %8s\n' "$1" "$2" "$3" "$4" "${6:-}" "${5:-}"
	echo "$2|$3|$4" >>"$results"
}
path=(--up "netem delay 20ms; tbf rate 10mbit burst 32k latency 50ms" --down "netem delay 20ms")
for r in $(seq "$rounds"); do
	for mode in root rootless; do
		run=()
		[ "$mode" = rootless ] && run=(as_user)
		veth=$("${run[@]}" "$tmp/wl-routerbench" veth -t 5)
		base=$(field gbps "$veth")
		record "$r" "$mode" "tcp veth Gbit/s" "$base"
		for chain in '' 'netem delay 10ms limit 100000'; do
			out=$("${run[@]}" "$tmp/wl-routerbench" router -t 5 ${chain:+-chain "$chain"})
			g=$(field gbps "$out")
			record "$r" "$mode" "router ratio to veth: ${chain:-empty chain}" "$(echo "scale=3; $g / $base" | bc -l)" "$(field up_p99_us "$out")"
		done
		file=$home/$mode-$r-ping.json.gz
		"${run[@]}" "$tmp/wanlab" run ping --duration "${secs}s" "${path[@]}" -o "$file" >/dev/null 2>&1
		record "$r" "$mode" "ping ICMP RTT ms" "$(series_mean "$file" "Ping (ms) ICMP")"
		file=$home/$mode-$r.json.gz
		"${run[@]}" "$tmp/wanlab" run tcp_upload --duration "${secs}s" --lead 2s --tail 2s "${path[@]}" -o "$file" >/dev/null 2>&1
		record "$r" "$mode" "tcp_upload goodput Mbit/s" "$(series_mean "$file" "TCP upload")"
		record "$r" "$mode" "tcp_upload ICMP RTT under load ms" "$(series_mean "$file" "Ping (ms) ICMP")"
	done
done
echo
echo "# means over $rounds rounds"
printf '%-46s %10s %10s %8s\n' figure root rootless ratio
cut -d'|' -f2 "$results" | awk '!seen[$0]++' | while read -r name; do
	a=$(awk -F'|' -v n="$name" '$1=="root" && $2==n {s+=$3; c++} END {printf "%.4f", s/c}' "$results")
	b=$(awk -F'|' -v n="$name" '$1=="rootless" && $2==n {s+=$3; c++} END {printf "%.4f", s/c}' "$results")
	printf '%-46s %10s %10s %8.4f\n' "$name" "$a" "$b" "$(echo "$b / $a" | bc -l)"
done
