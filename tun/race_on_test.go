//go:build race

package tun

// raceEnabled reports that the tests run under the race detector, which
// slows every memory access several times: tests then move less data and
// skip what only a loop at full speed can show (upper bounds on round
// trips, a ring that never overflows), and keep every other assertion.
const raceEnabled = true
