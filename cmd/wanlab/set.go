package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"wanlab/lab"
	"wanlab/link"
	"wanlab/qdisc"
	"wanlab/tcspec"
	"wanlab/testrun"
)

func newSetCommand(s *streams) *cobra.Command {
	var p pathFlags
	var accessUp, accessDown []string
	c := &cobra.Command{
		Use:   "set [N] --up CHAIN | --down CHAIN | --both CHAIN | --up-script FILE | --down-script FILE | --script FILE --up-dev DEV --down-dev DEV",
		Short: "Change a direction's qdisc chain on a running testbed",
		Long: `set changes the chain of the given directions while traffic flows, as tc
would: where a position keeps its kind, the discipline is changed in place
('tc qdisc change') and keeps its packets; from the first position whose kind
differs, the old disciplines are replaced or removed ('tc qdisc replace',
'del', 'add') and the packets they hold are lost, counted as flushed drops.
An htb keeps its classes' packets and tokens where they stay ('tc class
change'). An empty chain ("") makes the direction a direct connection.
Directions not given keep their chain. On a dumbbell, --access-up and
--access-down HOST=CHAIN (repeatable) change a host's access link in the
same way; a host can only have its access link changed if it was built with
one (up --access-up HOST=, an empty chain, gives it a direct one to start
with).

A script of tc lines (--up-script, --down-script, or --script with the
devices of each direction, --set for its variables) changes the running
tree as the lines would change a device's: each command in turn, from the
tree as it is, whose qdiscs have the handles 'wanlab status' shows. Every
command is checked first, against the tree as the ones before leave it: a
line the kernel would refuse (a class a filter still uses, an htb option
htb cannot change in place) is refused with its number, and nothing
changes.
Distribution files (netem ... distribution FILE.dist) are read by set, from
the current directory, and sent to the testbed.

N may be left out when one testbed is running.`,
		Example: `  wanlab set --up "netem delay 50ms loss 1%"
  wanlab set wan --both "tbf rate 10mbit burst 32k latency 50ms"
  wanlab set --down ""
  wanlab set db --access-up "c2=netem delay 80ms"
  wanlab set --up-script rates.sh --set RATE=2mbit    # e.g. tc class change dev eth0 parent 1:1 classid 1:10 htb rate $RATE`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			fs := c.Flags()
			type change struct{ dir, flag, text string }
			var changes []change
			if fs.Changed("both") {
				if fs.Changed("up") || fs.Changed("down") {
					return usagef("--both sets both directions: give either --both, or --up and/or --down")
				}
				changes = append(changes, change{"both", "--both", p.both})
			}
			if fs.Changed("up") {
				changes = append(changes, change{"up", "--up", p.up})
			}
			if fs.Changed("down") {
				changes = append(changes, change{"down", "--down", p.down})
			}
			sc, err := p.readScripts()
			if err != nil {
				return err
			}
			// One access link given twice would be set twice, the last
			// value winning without a word: refused, as up refuses it.
			seen := map[string]string{}
			for _, a := range []struct {
				dir, flag string
				specs     []string
			}{{"up", "--access-up", accessUp}, {"down", "--access-down", accessDown}} {
				for _, spec := range a.specs {
					h, text, err := link.ParseAccess(spec)
					if err != nil {
						return usagef("%s %q: %v", a.flag, spec, err)
					}
					if prev, ok := seen[h.LinkName(a.dir)]; ok {
						return usagef("%s gives %s an access link twice (%q and %q): keep one", a.flag, h, prev, spec)
					}
					seen[h.LinkName(a.dir)] = spec
					changes = append(changes, change{h.LinkName(a.dir), fmt.Sprintf("%s %q", a.flag, spec), text})
				}
			}
			if len(changes) == 0 && !sc.Any() {
				return usagef("nothing to set: give --up CHAIN, --down CHAIN or --both CHAIN, a script (--up-script, --down-script, --script), or a host's --access-up or --access-down HOST=CHAIN")
			}
			// Every chain is checked here before any is sent, and the
			// testbed checks each against its direction before applying
			// any.
			if err := enterLab(); err != nil {
				return err
			}
			var sets []lab.ChainText
			for _, ch := range changes {
				specs, err := parseChain(ch.flag, ch.text)
				if err != nil {
					return err
				}
				if err := lab.CheckChain(specs); err != nil {
					return usagef("%s: %v", ch.flag, err)
				}
				sets = append(sets, lab.ChainText{Dir: ch.dir, Chain: ch.text})
			}
			name, err := testbedArg(args)
			if err != nil {
				return err
			}
			if sc.Any() {
				scripts, err := checkScripts(name, sc)
				if err != nil {
					return err
				}
				sets = append(sets, scripts...)
			}
			// lab.Set reads the chains' distribution files here, in this
			// directory, and sends their tables.
			done, err := lab.Set(name, sets...)
			for _, d := range done {
				printChange(s.out, name, d)
			}
			if errors.Is(err, lab.ErrBadInput) {
				return usagef("%v", err)
			}
			return err
		},
	}
	p.register(c.Flags())
	c.Flags().StringArrayVar(&accessUp, "access-up", nil, `a host's new access link for up packets (repeatable), HOST=CHAIN: "c2=netem delay 80ms"`)
	c.Flags().StringArrayVar(&accessDown, "access-down", nil, "a host's new access link for down packets (repeatable), HOST=CHAIN, as --access-up")
	return c
}

// checkScripts checks the scripts against the running testbed's trees,
// each command from the tree the ones before it leave (so that a line
// the kernel would refuse is named by its number in the file), and
// returns what to send: each direction's commands, without variables.
func checkScripts(name string, sc testrun.Scripts) ([]lab.ChainText, error) {
	st, err := lab.GetStatus(name, 1)
	if err != nil {
		return nil, err
	}
	var sets []lab.ChainText
	for _, d := range []struct {
		dir, from string
		script    *tcspec.Script
		chain     string
	}{{"up", sc.UpFrom, sc.Up, st.Up.Chain}, {"down", sc.DownFrom, sc.Down, st.Down.Chain}} {
		if d.script == nil {
			continue
		}
		base, err := tcspec.ParseChain(d.chain, tcOptions())
		if err != nil {
			return nil, fmt.Errorf("testbed %s: its %s chain %q does not read back: %w", name, d.dir, d.chain, err)
		}
		steps, err := d.script.Steps(base)
		if err == nil {
			err = tcspec.CheckSteps(base, steps, &qdisc.Env{Framing: st.Framing})
		}
		if err != nil {
			return nil, usagef("%s: %v (nothing was changed)", d.from, err)
		}
		sets = append(sets, lab.ChainText{Dir: d.dir, Script: d.script.String()})
	}
	return sets, nil
}

// printChange says what a set did to one direction: the new chain, then
// what happened at each position, as tc would have done it. A script's
// command is named before what it did.
func printChange(w io.Writer, name string, d lab.DirChange) {
	chain := d.Chain
	if chain == "" {
		chain = "direct (no qdisc)"
	}
	if d.Command != "" {
		chain = d.Command
	}
	fmt.Fprintf(w, "%s %s: %s\n", name, d.Dir, chain)
	for _, line := range strings.Split(d.Change.String(), "\n") {
		if line != "" {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
}
