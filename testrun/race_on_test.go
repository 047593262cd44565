//go:build race

package testrun

// raceEnabled reports that the tests run under the race detector, which
// slows the router (it runs in the test's process) and the flows several
// times over: timing figures are then logged, not judged.
const raceEnabled = true
