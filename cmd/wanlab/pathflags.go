package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"wanlab/internal/distfile"
	"wanlab/lab"
	"wanlab/qdisc"
	"wanlab/tcspec"
	"wanlab/testrun"
)

// pathFlags are the flags that describe a path, shared by every command that
// builds one (sim, up, set): a tc chain per direction, or scripts of tc
// lines (--up-script, --down-script, --script with --up-dev and
// --down-dev, their variables from --set), whose flags are
// testrun.Registry's, as wanlab run's are.
type pathFlags struct {
	up, down, both string
	scripts        testrun.Options
}

// scriptKeys are the registry's options of the path's scripts.
var scriptKeys = []string{"up_script", "down_script", "script", "up_dev", "down_dev", "set"}

func (p *pathFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&p.up, "up", "", `qdisc chain client→server in tc syntax, root first: "netem delay 50ms; tbf rate 10mbit burst 32k latency 50ms"`)
	fs.StringVar(&p.down, "down", "", "qdisc chain server→client, as --up")
	fs.StringVar(&p.both, "both", "", "the same chain in both directions (each direction gets its own instance)")
	for _, key := range scriptKeys {
		op := testrun.LookupOption(key)
		fl := fs.VarPF(optionFlag{op, &p.scripts}, op.Flag, op.Short, op.Usage())
		fl.DefValue = ""
	}
}

// readScripts reads the scripts the flags name (testrun.ReadScripts,
// which refuses a script and a chain for one direction).
func (p *pathFlags) readScripts() (testrun.Scripts, error) {
	o := p.scripts
	o.Up, o.Down, o.Both = p.up, p.down, p.both
	sc, err := testrun.ReadScripts(&o, tcOptions())
	if err != nil {
		return sc, usagef("%v", err)
	}
	return sc, nil
}

// flags returns the flags that gave each direction's chain, for messages:
// --up and --down, or --both for both.
func (p *pathFlags) flags() (up, down string) {
	if p.both != "" {
		return "--both", "--both"
	}
	return "--up", "--down"
}

// chains parses the flags into one chain per direction, a script's
// applied on env's device (nil: Ethernet of MTU 1500). An empty chain is
// a direct path.
func (p *pathFlags) chains(env *qdisc.Env) (up, down []qdisc.Spec, err error) {
	if p.both != "" && (p.up != "" || p.down != "") {
		return nil, nil, usagef("--both sets both directions: give either --both, or --up and/or --down")
	}
	sc, err := p.readScripts()
	if err != nil {
		return nil, nil, err
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
	if down, err = parseChain(downFlag, downText); err != nil {
		return nil, nil, err
	}
	su, sd, err := sc.Chains(env)
	if err != nil {
		return nil, nil, usagef("%v", err)
	}
	if sc.Up != nil {
		up = su
	}
	if sc.Down != nil {
		down = sd
	}
	return up, down, nil
}

// labChains is chains for a testbed: each chain must also be one the
// router can build (lab.CheckChain), which tcspec alone does not show.
func (p *pathFlags) labChains(env *qdisc.Env) (up, down []qdisc.Spec, err error) {
	if up, down, err = p.chains(env); err != nil {
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

// describeChain prints a chain for humans; an empty one is a direct path,
// a tree its tc lines, one a line.
func describeChain(chain []qdisc.Spec) string {
	if len(chain) == 0 {
		return "direct (no qdisc)"
	}
	if tcspec.HasTree(chain) {
		return "\n  " + strings.Join(tcspec.FormatScript(chain, "DEV"), "\n  ")
	}
	return tcspec.FormatChain(chain)
}
