//go:build !race

package tun

// raceEnabled reports that the tests run under the race detector (see
// race_on_test.go).
const raceEnabled = false
