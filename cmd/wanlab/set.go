package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"wanlab/lab"
)

func newSetCommand(s *streams) *cobra.Command {
	var p pathFlags
	c := &cobra.Command{
		Use:   "set [N] --up CHAIN | --down CHAIN | --both CHAIN",
		Short: "Change a direction's qdisc chain on a running testbed",
		Long: `set changes the chain of the given directions while traffic flows, as tc
would: where a position keeps its kind, the discipline is changed in place
('tc qdisc change') and keeps its packets; from the first position whose kind
differs, the old disciplines are replaced or removed ('tc qdisc replace',
'del', 'add') and the packets they hold are lost, counted as flushed drops.
An empty chain ("") makes the direction a direct connection. Directions not
given keep their chain.
Distribution files (netem ... distribution FILE.dist) are read by set, from
the current directory, and sent to the testbed.

N may be left out when one testbed is running.`,
		Example: `  wanlab set --up "netem delay 50ms loss 1%"
  wanlab set wan --both "tbf rate 10mbit burst 32k latency 50ms"
  wanlab set --down ""`,
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
			if len(changes) == 0 {
				return usagef("nothing to set: give --up CHAIN, --down CHAIN or --both CHAIN")
			}
			// Every chain is checked here before any is sent, and the
			// testbed checks each against its direction before applying
			// any.
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
	return c
}

// printChange says what a set did to one direction: the new chain, then
// what happened at each position, as tc would have done it.
func printChange(w io.Writer, name string, d lab.DirChange) {
	chain := d.Chain
	if chain == "" {
		chain = "direct (no qdisc)"
	}
	fmt.Fprintf(w, "%s %s: %s\n", name, d.Dir, chain)
	for _, line := range strings.Split(d.Change.String(), "\n") {
		if line != "" {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
}
