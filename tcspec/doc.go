// Package tcspec reads and prints tc's qdisc syntax exactly as iproute2
// parses it, into and from the configs of package qdisc.
//
// Keywords are matched as tc matches them (netem takes prefixes, first
// match in tc's source order: "d" is delay, "r" is reorder; tbf, the AQMs
// and the fifos mostly want whole words). Numbers and units are read as
// get_rate64, get_size, get_time, get_time64 and parse_percent read them:
// rates are decimal and case-insensitive ("10mbps" is 80 Mbit/s), sizes
// binary ("32kbit" is 4096 bytes), AQM times default to µs. tc's checks are
// applied ("gap" needs "reorder", "ecn" needs a loss model, tbf needs rate,
// burst and limit or latency) and the defaults tc or the kernel would use
// are filled in, so that a config reads as "tc -s qdisc show" would print
// it. Every error is an *Error that names the offending word and the fix.
//
// ShowQdisc and ShowStats print what `tc -s qdisc show` prints for a
// config: the values after the kernel's round trip through its own units
// and tc's rounding (show.go).
//
// Where tc's reading is ambiguous across versions, tcspec refuses rather
// than guesses: a bare number as a netem delay or jitter meant µs in
// iproute2 before 2024 and ns since (commit 9a6b231e), so tcspec asks for a
// unit. netem's slot times have always been read with get_time64, so a bare
// number there is ns, as in tc.
//
// wanlab's extensions are separate words tc would never take:
// "correlation kernel|correct", "fifo_jitter" and "oldgap" for netem,
// "invsqrt linux|exact" for codel and fq_codel, "mem_overhead" for
// fq_codel.
package tcspec
