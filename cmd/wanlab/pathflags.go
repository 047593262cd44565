package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"wanlab/internal/distfile"
	"wanlab/lab"
	"wanlab/qdisc"
	"wanlab/tcspec"
)

// pathFlags are the flags that describe a path, shared by every command that
// builds one (sim, up, set): a tc chain per direction.
type pathFlags struct {
	up, down, both string
}

func (p *pathFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&p.up, "up", "", `qdisc chain client→server in tc syntax, root first: "netem delay 50ms; tbf rate 10mbit burst 32k latency 50ms"`)
	fs.StringVar(&p.down, "down", "", "qdisc chain server→client, as --up")
	fs.StringVar(&p.both, "both", "", "the same chain in both directions (each direction gets its own instance)")
}

// flags returns the flags that gave each direction's chain, for messages:
// --up and --down, or --both for both.
func (p *pathFlags) flags() (up, down string) {
	if p.both != "" {
		return "--both", "--both"
	}
	return "--up", "--down"
}

// chains parses the flags into one chain per direction. An empty chain is a
// direct path.
func (p *pathFlags) chains() (up, down []qdisc.Spec, err error) {
	if p.both != "" && (p.up != "" || p.down != "") {
		return nil, nil, usagef("--both sets both directions: give either --both, or --up and/or --down")
	}
	upFlag, downFlag := p.flags()
	upText, downText := p.up, p.down
	if p.both != "" {
		upText, downText = p.both, p.both
	}
	if up, err = parseChain(upFlag, upText); err != nil {
		return nil, nil, err
	}
	// With --both the text is parsed again rather than shared: each
	// direction owns its configs.
	down, err = parseChain(downFlag, downText)
	return up, down, err
}

// labChains is chains for a testbed: each chain must also be one the
// router can build (lab.CheckChain), which tcspec alone does not show.
func (p *pathFlags) labChains() (up, down []qdisc.Spec, err error) {
	if up, down, err = p.chains(); err != nil {
		return nil, nil, err
	}
	upFlag, downFlag := p.flags()
	if err := lab.CheckChain(up); err != nil {
		return nil, nil, usagef("%s: %v", upFlag, err)
	}
	if err := lab.CheckChain(down); err != nil {
		return nil, nil, usagef("%s: %v", downFlag, err)
	}
	return up, down, nil
}

func parseChain(flag, text string) ([]qdisc.Spec, error) {
	specs, err := tcspec.ParseChain(text, tcOptions())
	if err != nil {
		return nil, usagef("%s: %v", flag, err)
	}
	return specs, nil
}

// tcOptions gives the tc parser access to distribution files, read from
// the caller's working directory or tc's library directories.
func tcOptions() tcspec.Options { return tcspec.Options{LoadDist: distfile.Load} }

// chainWarnings collects the warnings of a chain's disciplines on env's
// device (nil for the default one): settings that behave very differently
// from what their numbers suggest.
func chainWarnings(dir string, chain []qdisc.Spec, env *qdisc.Env) []string {
	var ws []string
	for _, s := range chain {
		for _, x := range qdisc.Warnings(s, env) {
			ws = append(ws, fmt.Sprintf("%s: %s: %s", dir, s.Kind(), x))
		}
	}
	return ws
}

// describeChain prints a chain for humans; an empty one is a direct path.
func describeChain(chain []qdisc.Spec) string {
	if len(chain) == 0 {
		return "direct (no qdisc)"
	}
	return tcspec.FormatChain(chain)
}
