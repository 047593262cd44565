package link

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// MaxHosts bounds the clients and the servers of a dumbbell each.
const MaxHosts = 16

// Host names a host of a dumbbell: client N (c1, c2, ...) or server N
// (s1, s2, ...), N from 1. The clients are the up path's ingress ports
// and the down path's egress ports, the servers the other way round: host
// N is port N-1.
type Host struct {
	Server bool
	N      int
}

// String returns the host's name, "c2" or "s1".
func (h Host) String() string {
	if h.Server {
		return "s" + strconv.Itoa(h.N)
	}
	return "c" + strconv.Itoa(h.N)
}

// Port returns the host's port in the paths it is on.
func (h Host) Port() int { return h.N - 1 }

// ParseHost parses a host name: c1 to c16 for the clients, s1 to s16 for
// the servers.
func ParseHost(s string) (Host, error) {
	var h Host
	if len(s) < 2 {
		return h, hostSyntax(s)
	}
	switch s[0] {
	case 'c', 'C':
	case 's', 'S':
		h.Server = true
	default:
		return h, hostSyntax(s)
	}
	n, err := strconv.Atoi(s[1:])
	if err != nil || s[1] == '+' || s[1] == '-' {
		return h, hostSyntax(s)
	}
	if n < 1 || n > MaxHosts {
		return h, fmt.Errorf("host %q: hosts are numbered 1 to %d; give c1..c%d or s1..s%d", s, MaxHosts, MaxHosts, MaxHosts)
	}
	h.N = n
	return h, nil
}

func hostSyntax(s string) error {
	return fmt.Errorf("host %q is not a host name; name a client c1..c%d or a server s1..s%d", s, MaxHosts, MaxHosts)
}

// Check reports whether h is a host of a dumbbell of that many clients
// and servers, saying what to change if not; its error is ErrNoHost.
func (h Host) Check(clients, servers int) error {
	n, role, what := clients, "client", "clients"
	if h.Server {
		n, role, what = servers, "server", "servers"
	}
	if h.N <= n {
		return nil
	}
	if n == 1 {
		return noHost(fmt.Sprintf("%s: there is one %s (%s); name it, or give more %s", h, role, Host{h.Server, 1}, what))
	}
	return noHost(fmt.Sprintf("%s: there are %d %s (%s..%s); name one of them, or give more %s", h, n, what, Host{h.Server, 1}, Host{h.Server, n}, what))
}

// ErrNoHost is the error of Host.Check (errors.Is), for callers that add
// how the number of hosts is set.
var ErrNoHost = errors.New("no such host")

type noHost string

func (e noHost) Error() string        { return string(e) }
func (e noHost) Is(target error) bool { return target == ErrNoHost }

// ParseAccess parses an access link's description, HOST=CHAIN (c2=netem
// delay 40ms), into the host and the chain's text, which the caller parses
// with tcspec as any chain. An empty chain is a direct access link.
func ParseAccess(s string) (Host, string, error) {
	name, chain, ok := strings.Cut(s, "=")
	if !ok {
		return Host{}, "", fmt.Errorf("%q is not HOST=CHAIN; write e.g. \"c2=netem delay 40ms\"", s)
	}
	h, err := ParseHost(strings.TrimSpace(name))
	if err != nil {
		return Host{}, "", err
	}
	return h, strings.TrimSpace(chain), nil
}

// LinkName returns the name of h's access link in direction dir ("up" or
// "down"), "up:c2": its name in errors and, through DirectionSeed, its
// seed.
func (h Host) LinkName(dir string) string { return dir + ":" + h.String() }
