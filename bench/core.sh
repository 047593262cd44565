#!/usr/bin/env bash
# Benchmarks of the emulation core: ns and allocations per packet for each
# discipline (enqueue + dequeue; goal 150 ns for red, sfq, fq_pie, cake and
# dualpi2), and the simulator's packets per second of
# wall time through real chains. Goals: <= 100 ns and 0 allocs per packet
# per discipline; >= 5 million packets/s through
# "netem delay 50ms; tbf ...; fq_codel".
# Usage: bench/core.sh [count]   (default 5 repetitions)
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-5}
go test ./qdisc/ -run '^$' -bench 'Netem|TBF|PfifoFast|PIE|CoDel|RED|SFQ|Cake|DualPI2' -benchtime 200000x -count "$count" -benchmem
go test ./link/ -run '^$' -bench . -benchtime 1000000x -count "$count" -benchmem
go test ./sim/ -run '^$' -bench 'SimChain' -benchtime 2000000x -count "$count" -benchmem
