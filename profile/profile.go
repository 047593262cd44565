// Package profile holds wanlab's built-in paths: typical access and core
// links written as a qdisc chain per direction, so that a user can run a
// test on "a home broadband line" without writing tc lines, and swap the
// bottleneck's queue for an AQM with one word.
//
// Every chain has the same shape: netem as the root for the propagation
// delay (with a limit high enough never to be the bottleneck: netem's limit
// counts the packets of its child too), a tbf for the link rate, and a
// FIFO as the tbf's child: the bottleneck queue that WithAQM replaces.
package profile

import (
	"fmt"
	"slices"
	"strings"

	"wanlab/qdisc"
	"wanlab/tcspec"
)

// Profile is a named path: a chain per direction in tc syntax.
type Profile struct {
	// Name is what --profile takes.
	Name string
	// Summary says in one line what the path is.
	Summary string
	// Up is the client→server chain and Down the server→client one, in tc
	// syntax, root first.
	Up, Down string
	// Why explains the figures and where they come from.
	Why string
}

var profiles = []Profile{
	{
		Name:    "home",
		Summary: "home broadband: 20 Mbit/s down, 5 Mbit/s up, 20 ms each way, deep FIFOs (about 600 ms each) at the bottlenecks",
		Up:      "netem delay 20ms limit 10000; tbf rate 5mbit burst 16k latency 600ms; pfifo limit 256",
		Down:    "netem delay 20ms limit 10000; tbf rate 20mbit burst 32k latency 600ms; pfifo limit 1000",
		Why: "An asymmetric cable or DSL line of the kind the bufferbloat measurements were made on: " +
			"modems and home routers with hundreds of milliseconds of buffer in front of a slow uplink " +
			"(Gettys and Nichols, \"Bufferbloat: Dark Buffers in the Internet\", ACM Queue 9(11), 2011; " +
			"Kreibich et al., \"Netalyzr: Illuminating the Edge Network\", IMC 2010, found uplink buffers " +
			"of a second and more). 256 packets of 1514 bytes at 5 Mbit/s and 1000 at 20 Mbit/s are " +
			"each about 600 ms. The 20 ms of propagation each way is a nearby server.",
	},
	{
		Name:    "lte",
		Summary: "LTE: 30 Mbit/s down, 10 Mbit/s up, 30 ms ± 5 ms each way without reordering, large per-user buffers",
		Up:      "netem delay 30ms 5ms distribution normal fifo_jitter limit 10000; tbf rate 10mbit burst 32k latency 400ms; pfifo limit 300",
		Down:    "netem delay 30ms 5ms distribution normal fifo_jitter limit 10000; tbf rate 30mbit burst 64k latency 400ms; pfifo limit 1000",
		Why: "A good LTE cell: rates and a 50-70 ms base RTT as measured by Huang et al. (\"An In-depth Study " +
			"of LTE\", SIGCOMM 2013), with the per-user buffers that make cellular links bloat (Jiang et al., " +
			"\"Tackling Bufferbloat in 3G/4G Networks\", IMC 2012). The radio link's retransmissions vary " +
			"the delay but RLC delivers in order, hence fifo_jitter: the delay varies without reordering.",
	},
	{
		Name:    "geo",
		Summary: "geostationary satellite: 25 Mbit/s down, 3 Mbit/s up, 300 ms each way",
		Up:      "netem delay 300ms limit 100000; tbf rate 3mbit burst 16k latency 600ms; pfifo limit 150",
		Down:    "netem delay 300ms limit 100000; tbf rate 25mbit burst 64k latency 600ms; pfifo limit 1250",
		Why: "A consumer GEO service: the propagation delay to a geostationary satellite and back down is " +
			"about 250-280 ms one way (RFC 2488, section 2), to which ground segment and gateway add a " +
			"few tens of milliseconds; rates as sold for such services. Buffers of about 600 ms.",
	},
	{
		Name:    "datacenter",
		Summary: "data-centre path: 10 Gbit/s, 250 µs each way, a shallow switch buffer",
		Up:      "netem delay 250us limit 100000; tbf rate 10gbit burst 4m latency 1ms; pfifo limit 1000",
		Down:    "netem delay 250us limit 100000; tbf rate 10gbit burst 4m latency 1ms; pfifo limit 1000",
		Why: "A path across a few switches of a data-centre fabric: a base RTT of about 0.5 ms and a " +
			"shallow buffer (1000 packets, 1.2 ms at 10 Gbit/s), as described for DCTCP's environment " +
			"(Alizadeh et al., \"Data Center TCP\", SIGCOMM 2010). Emulating it needs a router that keeps " +
			"up with 10 Gbit/s and releases packets within a few microseconds: the run's fidelity verdict " +
			"says whether this machine did.",
	},
}

// Names returns the profiles' names in a stable order.
func Names() []string {
	n := make([]string, len(profiles))
	for i, p := range profiles {
		n[i] = p.Name
	}
	return n
}

// All returns every profile.
func All() []Profile { return slices.Clone(profiles) }

// Lookup returns the profile called name.
func Lookup(name string) (Profile, error) {
	for _, p := range profiles {
		if p.Name == name {
			return p, nil
		}
	}
	return Profile{}, fmt.Errorf("profile %q is unknown: use one of %s", name, strings.Join(Names(), ", "))
}

// Chains parses the profile's chains.
func (p Profile) Chains(opt tcspec.Options) (up, down []qdisc.Spec, err error) {
	if up, err = tcspec.ParseChain(p.Up, opt); err != nil {
		return nil, nil, fmt.Errorf("profile %s: up: %w", p.Name, err)
	}
	if down, err = tcspec.ParseChain(p.Down, opt); err != nil {
		return nil, nil, fmt.Errorf("profile %s: down: %w", p.Name, err)
	}
	return up, down, nil
}

// AQMs lists what WithAQM takes. red is not among them: its thresholds
// are the path's (tc requires limit and avpkt), so it goes in the chain.
var AQMs = []string{"fq_codel", "codel", "pie", "fq_pie", "sfq", "cake", "dualpi2", "pfifo", "bfifo", "pfifo_fast"}

// shapers are the AQMs that shape as well: they take the place of the
// tbf itself, at its rate, as they are deployed (cake is SQM's shaper
// and queue in one).
var shapers = []string{"cake"}

// WithAQM returns chain with its bottleneck queue replaced by the discipline
// aqm, with that discipline's default options: the child of the last tbf in
// the chain (the tbf's own byte FIFO when it has no child). A shaping AQM
// (cake) replaces the tbf and its child instead, with the tbf's rate as
// its bandwidth. A chain without a tbf has no bottleneck to change, which
// is an error.
func WithAQM(chain []qdisc.Spec, aqm string) ([]qdisc.Spec, error) {
	if !slices.Contains(AQMs, aqm) {
		return nil, fmt.Errorf("--aqm %q is unknown: use one of %s", aqm, strings.Join(AQMs, ", "))
	}
	last := -1
	for i, s := range chain {
		if s.Kind() == "tbf" {
			last = i
		}
	}
	if last < 0 {
		return nil, fmt.Errorf("--aqm %s needs a tbf in the chain (its child is the bottleneck queue); this chain has none: add a tbf or put %s in the chain yourself", aqm, aqm)
	}
	text, keep := aqm, last+1
	if slices.Contains(shapers, aqm) {
		tbf, ok := chain[last].(qdisc.TBFConfig)
		if !ok {
			return nil, fmt.Errorf("--aqm %s: the chain's tbf is a %T, not a tbf configuration", aqm, chain[last])
		}
		text, keep = fmt.Sprintf("%s bandwidth %dbit", aqm, uint64(tbf.Rate)*8), last
	}
	spec, err := tcspec.Parse(text, tcspec.Options{})
	if err != nil {
		return nil, err
	}
	out := slices.Clone(chain[:keep])
	return append(out, spec), nil
}
