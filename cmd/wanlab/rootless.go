package main

import (
	"errors"

	"wanlab/rootless"
)

// mainArgs are the program and its arguments as main received them: a
// command that must enter the user's namespace runs them again there. Tests
// that call run directly leave it nil, and such a command refuses.
var mainArgs []string

// forceRootless is the --rootless flag of this command line.
var forceRootless bool

// enterLab makes sure this process may build and reach testbeds. As root
// (without --rootless) it does nothing; otherwise the process becomes the
// same command inside the user's namespace, where the user is root (package
// rootless), and enterLab returns only if that fails. Commands call it once
// their input is checked and before they create anything, so that bad
// input is refused once and nothing is made twice.
func enterLab() error {
	if !rootless.Needed(forceRootless) {
		return nil
	}
	if mainArgs == nil {
		return errors.New("this command must run in the user's namespace, which only the wanlab binary can enter")
	}
	return rootless.Enter(mainArgs)
}
