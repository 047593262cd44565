// Package report writes wanlab's HTML report of one or more runs: a single
// self-contained page, viewable offline, that carries each run's setup and
// the command that runs it again, the summary of every series, the graphs,
// and the check that the emulator did what its chains said.
//
// Write reads only *results.Document values, so a report can be made again
// from saved results files. For each run the page shows:
//
//   - the setup: test, title, start, lengths, each direction's chain in tc
//     syntax, framing, seed, options, sysctls, kernel and wanlab version,
//     and the recorded command line, shell-quoted (results.ShellJoin);
//   - the summary of every series in the manner of Flent's `-f stats`
//     (the document's own figures), and of every flow's own series;
//   - the graphs of package plot: all_scaled and ping_cdf, and
//     tcp_cwnd_rtt and router_flows when the run has their series;
//   - the fidelity check: configured against achieved rate, delay and
//     loss, release lateness, drops in the TUN ring in front of the router,
//     and the verdicts of package fidelity.
//
// A run that was not faithful opens with a warning that names each cause,
// and a partial run with a warning that says why it stopped. With several
// runs the page starts with a table across them (each run's main upload
// and download series, its ping median and its verdict) and graphs that
// overlay them.
//
// With Options.Compare, a comparison of the report's runs (side A) with
// others (side B) made by package compare, the page has a section
// "Comparison with B" after its table across runs, or, for an experiment
// (WriteExperiment), after its tables: the comparison's caption, a table
// per pair of cases compared as `wanlab compare` prints it, the rows whose
// difference is significant shaded and saying so in words, and its notes.
//
// The page is made with html/template, so every string from a document
// (titles, chains, options, notes) is escaped as text. Its graphs over
// time are interactive: the page carries each run's throughput and
// latency series as JSON data, and its one script (the chart library
// uPlot, vendored through npm under third_party with its licence, then
// charts.js) draws them, so that a reader hovers to read values, clicks a
// legend entry to hide a series, drags to zoom into a time range and
// double-clicks to zoom out. The static SVG graph stays under each
// interactive one, shown without script and in print. A
// Content-Security-Policy allows nothing but the page's own stylesheet
// and script (each by hash) and images from data: URIs: a page that
// tried to load or send anything would be refused by the browser, and
// said so in its console. Static graphs are SVG images in data: URIs, so
// they scale to the screen and print sharply.
//
// The fidelity check shows what the run's router report
// (results.RouterReport) recorded: the configured rate (a trace's mean
// rate included) and delay, and what the router achieved; only the
// configured loss, which the report does not record, is read from the
// chain. A document without a router report says "no router data".
package report
