package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"wanlab/bridgeport"
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

A bridge (wanlab bridge) gives its ports back as they were when it stops.
Whatever bridge was killed (SIGKILL), down first gives its ports back, in
the namespace down runs in: run it where the bridge ran.

N may be left out when one testbed exists.`,
		Example: `  wanlab down
  wanlab down wan
  wanlab down --all`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if all && len(args) > 0 {
				return usagef("give a testbed name or --all, not both")
			}
			if err := enterLab(); err != nil {
				return err
			}
			restored, err := restorePorts(s)
			if err != nil {
				return err
			}
			if all {
				names, err := lab.DownAll()
				for _, n := range names {
					fmt.Fprintf(s.out, "testbed %s is down\n", n)
				}
				return err
			}
			name, err := downTarget(args)
			if errors.Is(err, errNothingToDown) && restored {
				return nil // a killed bridge's record was gone already
			}
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
	return "", errNothingToDown
}

var errNothingToDown = errors.New("no testbed exists: there is nothing to take down")

// restorePorts gives back the ports of bridges that were killed, in this
// namespace (bridgeport.RestoreStale), says so for each, and reports
// whether there were any. Without root there is nothing it could restore,
// and down says so itself.
func restorePorts(s *streams) (bool, error) {
	if os.Geteuid() != 0 {
		return false, nil
	}
	notes, err := bridgeport.RestoreStale()
	for _, n := range notes {
		fmt.Fprintf(s.out, "port %s\n", n)
	}
	return len(notes) > 0, err
}
