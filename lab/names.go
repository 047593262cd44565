package lab

import (
	"fmt"
	"hash/fnv"
	"net/netip"
	"unicode/utf8"
	"wanlab/link"

	"wanlab/netns"
)

// DefaultName is the testbed name used when none is given.
const DefaultName = "lab"

// Role names a host of a testbed.
type Role string

// The two hosts of a testbed.
const (
	Client Role = "client"
	Server Role = "server"
)

// ParseRole reads "client" or "server" (or their first letters), or a
// host of a dumbbell, c1..c16 or s1..s16 (link.ParseHost): c1 is the
// client and s1 the server. Whether the testbed has the host is for the
// testbed to say.
func ParseRole(s string) (Role, error) {
	switch s {
	case "client", "c":
		return Client, nil
	case "server", "s":
		return Server, nil
	}
	h, err := link.ParseHost(s)
	if err != nil {
		return "", fmt.Errorf("host %q is unknown: use client or server, or a host of a dumbbell, c1..c%d or s1..s%d", s, link.MaxHosts, link.MaxHosts)
	}
	return HostRole(h), nil
}

// Host returns the host of a dumbbell r is: c1 for Client, s1 for
// Server. r must come from ParseRole or HostRole.
func (r Role) Host() link.Host {
	switch r {
	case Client:
		return link.Host{N: 1}
	case Server:
		return link.Host{Server: true, N: 1}
	}
	h, _ := link.ParseHost(string(r))
	return h
}

// Peer returns the first host of the other side: the server for every
// client, the client for every server.
func (r Role) Peer() Role {
	if r.Host().Server {
		return Client
	}
	return Server
}

// short is the namespace role of a host: "c" and "s" for the client and
// the server, as testbeds of two hosts have always named them, and the
// host's own name ("c2", "s3") for the others.
func (r Role) short() string {
	if r == Client || r == Server {
		return string(r[:1])
	}
	return string(r)
}

// maxName is the longest testbed name netns accepts.
const maxName = 32

// CheckName reports whether name can name a testbed: 1 to 32 bytes of
// lowercase letters, digits, '-' and '_', not starting with '-' (a command
// line would read such a name as an option).
func CheckName(name string) error {
	if name == "" || len(name) > maxName {
		return fmt.Errorf("testbed name %q must be 1 to %d bytes long", name, maxName)
	}
	if name[0] == '-' {
		return fmt.Errorf("testbed name %q starts with '-', which commands would read as an option: start it with a letter or digit", name)
	}
	for i, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("testbed name %q: %s is not allowed (use a-z, 0-9, '-', '_')", name, describeChar(name, i, c))
		}
	}
	return nil
}

// describeChar names the character c at byte i of s as a reader sees it:
// 'é' (U+00E9), or the byte itself where s is not UTF-8 there.
func describeChar(s string, i int, c rune) string {
	if c == utf8.RuneError {
		if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
			return fmt.Sprintf("byte 0x%02x, which is not UTF-8,", s[i])
		}
	}
	return fmt.Sprintf("character %q (%U)", c, c)
}

// NamespaceName returns the namespace of host r of testbed name:
// "wl-NAME-c" or "wl-NAME-s".
func NamespaceName(name string, r Role) string {
	return netns.NamespaceName(name, r.short())
}

// routerRole is the role of the router's namespace on the packet plane.
const routerRole = "r"

// RouterNamespaceName returns the namespace of testbed name's router on
// the packet plane: "wl-NAME-r".
func RouterNamespaceName(name string) string {
	return netns.NamespaceName(name, routerRole)
}

// IfName returns the name of host r's interface to the router in testbed
// name (its TUN device, or its end of a veth pair): "wl-NAME-c0" for the
// client, "wl-NAME-s0" for the server and "wl-NAME-c2" for host c2 when
// that fits the kernel's 15 bytes, otherwise the first bytes of NAME
// (five for the client and the server) followed by four hex digits of its
// hash ("wl-exper1a2b-c0"), so that every name of up to 32 bytes gets a
// device name that still shows where it comes from.
func IfName(name string, r Role) string {
	if r == Client || r == Server {
		return ifName(name, r.short()+"0")
	}
	return ifName(name, r.short())
}

// RouterIfName returns the name of the router's end of host r's veth pair
// on the packet plane, in the router's namespace: "wl-NAME-rc" for the
// client's, "wl-NAME-rc2" for host c2's, shortened as IfName shortens.
func RouterIfName(name string, r Role) string { return ifName(name, routerRole+r.short()) }

// ifName is "wl-NAME-" and tail (two to four bytes), shortened to fit.
func ifName(name, tail string) string {
	ifn := netns.Prefix + name + "-" + tail
	if len(ifn) <= netns.MaxIfNameLen {
		return ifn
	}
	keep := netns.MaxIfNameLen - len(netns.Prefix) - 4 - 1 - len(tail)
	return fmt.Sprintf("%s%.*s%04x-%s", netns.Prefix, keep, name, nameHash(name)&0xffff, tail)
}

func nameHash(name string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(name))
	return h.Sum32()
}

// Addrs returns the IPv4 and IPv6 addresses of host r of testbed name:
// 10.X.Y.1 and fd00:776c:0:XXYY::1 for the client, .2 and ::2 for the
// server, where X.Y are two bytes of a hash of name; the other hosts of a
// dumbbell have 100+N (clients cN) or 200+N (servers sN) there, and
// IPv6 the same digits, read in hex: c2 is 10.X.Y.102 and ...::102, s16
// 10.X.Y.216 and ...::216.
func Addrs(name string, r Role) (v4, v6 netip.Addr) {
	h := nameHash(name)
	x, y := byte(h>>8), byte(h)
	var b4 byte
	var b6 uint16
	switch hr := r.Host(); {
	case r == Client:
		b4, b6 = 1, 1
	case r == Server:
		b4, b6 = 2, 2
	case hr.Server:
		b4, b6 = byte(200+hr.N), uint16(0x200+hr.N/10*16+hr.N%10)
	default:
		b4, b6 = byte(100+hr.N), uint16(0x100+hr.N/10*16+hr.N%10)
	}
	v4 = netip.AddrFrom4([4]byte{10, x, y, b4})
	v6 = netip.AddrFrom16([16]byte{0xfd, 0x00, 0x77, 0x6c, 0, 0, x, y, 14: byte(b6 >> 8), 15: byte(b6)})
	return v4, v6
}

// HostRole returns the role of host h of a dumbbell: Client for c1,
// Server for s1, and the host's own name ("c2", "s3") for the others.
func HostRole(h link.Host) Role {
	switch {
	case h.N == 1 && h.Server:
		return Server
	case h.N == 1:
		return Client
	}
	return Role(h.String())
}
