package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"wanlab/lab"
	"wanlab/qdisc"
)

func init() { addCommand(newSetCommand) }

func newSetCommand(s *streams) *cobra.Command {
	var p pathFlags
	c := &cobra.Command{
		Use:   "set [N] --up CHAIN | --down CHAIN | --both CHAIN",
		Short: "Change a direction's qdisc chain on a running testbed",
		Long: `set replaces the chain of the given directions while traffic flows, as
'tc qdisc change' would: the packets queued in the old chain move to the new
one, which treats them as new arrivals. An empty chain ("") makes the
direction a direct connection. Directions not given keep their chain.
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
			// Every chain is checked before any is applied.
			specs := make([][]qdisc.Spec, len(changes))
			for i, ch := range changes {
				var err error
				if specs[i], err = parseChain(ch.flag, ch.text); err != nil {
					return err
				}
				if err := lab.CheckChain(specs[i]); err != nil {
					return usagef("%s: %v", ch.flag, err)
				}
			}
			name, err := testbedArg(args)
			if err != nil {
				return err
			}
			for i, ch := range changes {
				// lab.Set reads the chain's distribution files here, in
				// this directory, and sends their tables.
				if err := lab.Set(name, ch.dir, ch.text); err != nil {
					if errors.Is(err, lab.ErrBadInput) {
						return usagef("%s: %v", ch.flag, err)
					}
					return err
				}
				fmt.Fprintf(s.out, "%s %s: %s\n", name, ch.dir, describeChain(specs[i]))
			}
			return nil
		},
	}
	p.register(c.Flags())
	return c
}
