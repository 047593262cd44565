// Command wanlab turns one Linux machine into a WAN lab: hosts in network
// namespaces joined by a userspace router that applies tc's queue
// disciplines per direction. `wanlab sim` runs the same emulation on a
// virtual clock, without root.
package main

import (
	"os"
	"runtime"

	"wanlab/rootless"
)

func init() {
	// Keep the main goroutine on the process's first thread, which stays in
	// the root network namespace: work inside a host's namespace runs on
	// other threads locked for the purpose (netns.Do), so nothing can leave
	// main in a namespace by accident.
	runtime.LockOSThread()
}

func main() {
	rootless.Begin()
	mainArgs = os.Args
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
