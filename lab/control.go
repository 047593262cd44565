package lab

import (
	"path/filepath"
	"time"

	"wanlab/internal/rundir"
	"wanlab/qdisc"
	"wanlab/router"
)

// RunDir holds each testbed's control socket (NAME.sock) and, for testbeds
// started with `wanlab up --detach`, its log (NAME.log), beside the
// registry's state files: /run/wanlab, or the user's private directory
// when rootless (see rundir).
var RunDir = rundir.State()

// SocketPath returns the control socket of testbed name.
func SocketPath(name string) string { return filepath.Join(RunDir, name+".sock") }

// LogPath returns the log file of a detached testbed name.
func LogPath(name string) string { return filepath.Join(RunDir, name+".log") }

// Status is a running testbed's description and live counters, as the
// control socket's status request returns it.
type Status struct {
	Info
	// Owner is the pid of the process running the testbed.
	Owner   int       `json:"owner_pid"`
	Created time.Time `json:"created"`
	// CC is the hosts' TCP congestion control.
	CC   string `json:"cc"`
	Seed uint64 `json:"seed"`
	// DataPlane is how the router meets the hosts ("tun" or "packet"; a
	// bridge's is "packet"), and Device the TUN device kind on the TUN
	// plane ("" on the other).
	DataPlane string        `json:"dataplane"`
	Device    string        `json:"device"`
	Framing   qdisc.Framing `json:"framing"`
	Pcap      string        `json:"pcap,omitempty"`
	// Changed lists what runs borrowing the testbed changed (a chain, a
	// host's sysctl) and could not restore when they ended or their
	// connection dropped: the testbed is no longer as it was set up.
	Changed []string `json:"changed,omitempty"`
	// PcapError says why the capture stopped, and when, if it did (its
	// reader went away, the disk is full): the testbed goes on
	// forwarding without recording.
	PcapError string `json:"pcap_error,omitempty"`
	// Snapshot is the router's: when it was taken (clock_ns, wall) and
	// the counters of each direction (up, down).
	router.Snapshot
}

// ExecSpec is a program to run inside a host of a running testbed.
type ExecSpec struct {
	// Host is the host to run on (Client if empty).
	Host Role `json:"host"`
	// Path is the program's file, absolute or relative to Dir; Args its
	// arguments with Args[0] the program's name.
	Path string   `json:"path"`
	Args []string `json:"args"`
	// Env is the program's environment; the testbed adds the variables of
	// Env(info, Host), replacing any of the same names.
	Env []string `json:"env"`
	// Dir is the working directory.
	Dir string `json:"dir"`
	// TTY runs the program on a new pseudo-terminal whose other end Exec
	// connects to the caller's terminal, as an interactive shell needs.
	TTY bool `json:"tty,omitempty"`
}

// request is one message from a client to a testbed's control socket.
type request struct {
	Op string `json:"op"` // status, set, down, exec, signal, borrow, end
	// Flows asks a status request for the busiest Flows flows of each
	// direction; 0 asks for all.
	Flows int `json:"flows,omitempty"`
	// Sets are a set request's new chains, each a direction (up, down,
	// both) and a chain in tc syntax; all are checked before any is
	// applied. Dists holds the distribution tables the chains name that
	// are not built in, read by the client, by the name the chains give.
	Sets  []ChainText        `json:"sets,omitempty"`
	Dists map[string][]int16 `json:"dists,omitempty"`
	Exec  *ExecSpec          `json:"exec,omitempty"`
	// Signal is sent by an exec client to forward a signal to its program.
	Signal int `json:"signal,omitempty"`
	// Sysctls are the host sysctls a borrow request's session may change
	// (see Borrow).
	Sysctls []SysctlKey `json:"sysctls,omitempty"`
}

// SysctlKey names a sysctl of one host, "net." or "net/" first.
type SysctlKey struct {
	Host Role   `json:"host"`
	Key  string `json:"key"`
}

// ChainText is one direction's new chain in tc syntax, as Set sends it,
// or a script of tc lines that changes the direction's tree as they would
// change a device's (Script, tcspec.Script's text, with no variables
// left): each command is then one change of the chain, applied in turn.
type ChainText struct {
	Dir    string `json:"dir"`
	Chain  string `json:"chain"`
	Script string `json:"script,omitempty"`
}

// response is one message from the control socket to a client.
type response struct {
	Error string `json:"error,omitempty"`
	// BadInput says that Error came from the request's input and that
	// nothing was changed (ErrBadInput on the client's side).
	BadInput bool    `json:"bad_input,omitempty"`
	Status   *Status `json:"status,omitempty"`
	// Changes says what a set request did, per direction.
	Changes []DirChange `json:"changes,omitempty"`
	// PID is the started program's pid (exec).
	PID int `json:"pid,omitempty"`
	// Exit is the program's exit status once it has ended (exec): its
	// exit code, or 128 plus the signal that ended it.
	Exit *int `json:"exit,omitempty"`
	// Restored says what the end of a session set back (end).
	Restored []string `json:"restored,omitempty"`
}
