package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"wanlab/lab"
	"wanlab/netns"
)

func newDownCommand(s *streams) *cobra.Command {
	var all bool
	c := &cobra.Command{
		Use:   "down [N | --all]",
		Short: "Stop a testbed and remove its namespaces, devices and processes",
		Long: `down asks the process running testbed N to stop and waits until it has
removed everything and exited; if that process is gone or does not answer,
down removes what is left itself. Either way every process in the hosts'
namespaces is ended (SIGTERM, then SIGKILL after two seconds), daemons and
programs started by hand included, before the namespaces, the control
socket and the record go. --all does so for every testbed, running or left
behind by a killed run.

N may be left out when one testbed exists.`,
		Example: `  wanlab down
  wanlab down wan
  wanlab down --all`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if all {
				if len(args) > 0 {
					return usagef("give a testbed name or --all, not both")
				}
				names, err := lab.DownAll()
				for _, n := range names {
					fmt.Fprintf(s.out, "testbed %s is down\n", n)
				}
				return err
			}
			name, err := downTarget(args)
			if err != nil {
				return err
			}
			if err := lab.Down(name); err != nil {
				return err
			}
			fmt.Fprintf(s.out, "testbed %s is down\n", name)
			return nil
		},
	}
	c.Flags().BoolVar(&all, "all", false, "take down every testbed")
	return c
}

// downTarget returns the testbed to take down: the one named, or the only
// one on record, running or not.
func downTarget(args []string) (string, error) {
	if len(args) > 0 {
		if err := lab.CheckName(args[0]); err != nil {
			return "", usagef("%v", err)
		}
		return args[0], nil
	}
	states, err := netns.Testbeds()
	switch {
	case len(states) == 1:
		return states[0].Name, nil
	case len(states) > 1:
		var names []string
		for _, st := range states {
			names = append(names, st.Name)
		}
		return "", usagef("%d testbeds exist (%v): name one, or give --all", len(states), names)
	case err != nil:
		return "", err
	}
	return "", errors.New("no testbed exists: there is nothing to take down")
}
