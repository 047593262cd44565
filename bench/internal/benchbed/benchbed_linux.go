// Package benchbed is the testbed of wanlab's benchmark programs
// (routerbench, soak): a testbed of the program's own with two namespaces,
// c and s, which goes when the program ends or is interrupted.
package benchbed

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"wanlab/netns"
)

// New removes what earlier runs left, registers the testbed NAMEPID (name
// followed by the program's pid) with its namespaces c and s, and removes
// it when the program is interrupted (SIGINT, SIGTERM), exiting 130. The
// caller closes tb when it is done.
func New(name string) (tb *netns.Testbed, c, s *netns.Handle, err error) {
	if _, err := netns.CleanStale(); err != nil {
		return nil, nil, nil, err
	}
	tb, err = netns.NewTestbed(fmt.Sprintf("%s%d", name, os.Getpid()))
	if err != nil {
		return nil, nil, nil, err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		tb.Close()
		os.Exit(130)
	}()
	if c, err = tb.Namespace("c"); err == nil {
		s, err = tb.Namespace("s")
	}
	if err != nil {
		tb.Close()
		return nil, nil, nil, err
	}
	return tb, c, s, nil
}
