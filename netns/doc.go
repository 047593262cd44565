// Package netns creates, enters, configures and removes the named network
// namespaces of a wanlab testbed, and keeps a registry of testbeds so that
// whatever a crashed run left behind is removed by the next one.
//
// # Namespaces and threads
//
// On Linux a network namespace belongs to a thread, not to a process. Go
// moves goroutines between threads, so code that must run inside a namespace
// runs through Do, which follows one pattern:
//
//  1. start a fresh goroutine and lock it to its OS thread, so that neither
//     the caller's thread nor any other goroutine sees the switch;
//  2. setns(2) into the target namespace and run the function there;
//  3. setns back to the namespace the thread started in. Only if that
//     succeeds is the thread unlocked and returned to the runtime. If it
//     fails, the goroutine exits while still locked, and the runtime then
//     terminates the thread instead of reusing it, so no goroutine can ever
//     run by accident in the wrong namespace.
//
// A program whose main goroutine must stay in the root namespace locks it in
// init (runtime.LockOSThread), which also keeps Do's goroutines off the main
// thread.
//
// What f does on its own goroutine happens in the namespace: sockets,
// netlink handles and TUN devices it creates stay bound to the namespace and
// can be used afterwards from any goroutine. Goroutines that f starts run on
// other threads, in the root namespace.
//
// # /proc inside a namespace
//
// /proc/sys/net/... resolves against the namespace of the calling thread, so
// sysctls written from inside Do land in the namespace (SetSysctl checks
// that before it writes). /proc/net and /proc/self/net, however, follow
// /proc/self, the thread-group leader, which stays in the root namespace:
// read /proc/thread-self/net/... instead. /sys/class/net shows the namespace
// of whoever mounted /sys, so it always shows the root namespace here; use
// netlink (the Handle's methods) instead.
//
// # Names
//
// Every namespace, device and process that wanlab creates is named with the
// prefix "wl-". A testbed NAME owns namespaces "wl-NAME-ROLE" and a state
// file /run/wanlab/NAME.json; see Testbed, Remove and CleanStale.
//
// # Processes
//
// A testbed owns every process in its namespaces, not only those it
// started: removing it finds them through the namespaces themselves (each
// process whose /proc/PID/ns/net is one of them), so a daemon that forked
// away from its starter, or a shell someone opened with `ip netns exec`,
// is ended too before the namespace goes. Processes are held by pidfd
// (pidfd_open(2)) from the moment they are found, so a signal never
// reaches a process that reused a pid; the caller itself is never
// signalled, whatever namespace its threads are in.
package netns
