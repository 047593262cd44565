// Package experiment runs sweeps: an experiment file names variables and
// their values, a path and tests whose options may use ${var}, and how
// often and in what order to run them; this package expands it into cases
// and runs, checks all of it before anything runs, executes the runs into
// a results directory (one results document per run plus an index), resumes
// an interrupted directory, splits the cases into shards for several
// machines and merges the shards' directories, and lays the results out as
// tables.
//
// An experiment file (docs/experiments.md describes every key):
//
//	name: e2-tbf
//	vars:                 # crossed into a grid
//	  rate: [1mbit, 2mbit, 5mbit, 10mbit]
//	  cc: [reno, cubic]
//	path:
//	  both: "netem delay 20ms; tbf rate ${rate} buffer 10000 limit 30000"
//	tests:
//	  - test: tcp_upload
//	    duration: 60s
//	    cc: ${cc}
//	repeat: 3
//	shuffle: true
//	pause: 2s
//
// The package knows nothing of what a run option means: a Backend lists the
// keys a test entry may use, checks each run, and runs it (in wanlab,
// package experiment/runner, which sets `wanlab run`'s options through
// testrun's registry and runs them with testrun). Load reports a file's
// problems together, each with the file, the line and the fix: first those
// of its structure (bad YAML, unknown keys with the nearest known one,
// values of the wrong shape), then, once the structure is sound, those
// found by expanding it (undefined ${var}, a chain tc would refuse with
// tcspec's message, a bad option value with the backend's).
//
// Seeds are derived, never drawn: each run's seed is a hash of the file's
// seed, the case's variables, the test entry and the repetition, so the
// same run has the same seed in every shard, on every resume and after the
// grid is reordered.
package experiment
