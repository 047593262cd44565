//go:build !race

package lab

// raceEnabled reports whether the tests run under the race detector, which
// slows the router's loops several times: round trips then keep their
// lower bound (never early) with a looser upper one, and throughput its
// upper bound with a looser lower one.
const raceEnabled = false
