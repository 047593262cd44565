// Package testrun runs one of Flent's tests across a wanlab path and turns
// what it measured into a results document: the orchestration behind
// `wanlab run`.
//
// A run is described by Options, which hold every option of the command
// (its CLI flag, its key in experiment files and where the results record
// it are listed in Table and in docs/options.md). Prepare checks them all
// before anything is created, so that bad input is reported in one line
// that names the fix (a *BadOption). Run then
//
//  1. builds the path: a testbed of its own (lab.Up), a running testbed
//     (Options.Lab), or, with Options.Direct, two namespaces joined by a
//     plain veth pair with the same addresses and no router;
//  2. sets the hosts' sysctls and makes every socket inside the hosts'
//     namespaces;
//  3. runs the test's flows and probes (package traffic) over lead, load
//     and tail on one step grid, reading the router's counters on the same
//     grid and applying the timed chain changes (Options.At) on time;
//  4. turns the samples into a results.Document: Flent's series with their
//     summaries over the load, each flow's own series (both ends' TCP_INFO,
//     the router's view of the flow, one-way delays, lost probes with their
//     direction) and the router's report with the fidelity verdict;
//  5. removes what it built, also when its context is cancelled (the
//     document is then marked partial) and, through the netns registry,
//     after a crash.
//
// Only the file routerview.go knows the router's snapshot types.
package testrun
