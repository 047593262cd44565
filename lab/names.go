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

// ParseRole reads "client" or "server" (or their first letters).
func ParseRole(s string) (Role, error) {
	switch s {
	case "client", "c":
		return Client, nil
	case "server", "s":
		return Server, nil
	}
	return "", fmt.Errorf("host %q is unknown: use client or server", s)
}

// Peer returns the other host.
func (r Role) Peer() Role {
	if r == Client {
		return Server
	}
	return Client
}

// short is the namespace role of a host: "c" or "s".
func (r Role) short() string { return string(r[:1]) }

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
// name (its TUN device, or its end of a veth pair): "wl-NAME-c0" when that
// fits the kernel's 15 bytes, otherwise the first five bytes of NAME
// followed by four hex digits of its hash ("wl-exper1a2b-c0"), so that
// every name of up to 32 bytes gets a device name that still shows where
// it comes from.
func IfName(name string, r Role) string { return ifName(name, r.short()+"0") }

// RouterIfName returns the name of the router's end of host r's veth pair
// on the packet plane, in the router's namespace: "wl-NAME-rc" for the
// client's, shortened as IfName shortens.
func RouterIfName(name string, r Role) string { return ifName(name, routerRole+r.short()) }

// ifName is "wl-NAME-" and the two bytes tail, shortened to fit.
func ifName(name, tail string) string {
	ifn := netns.Prefix + name + "-" + tail
	if len(ifn) <= netns.MaxIfNameLen {
		return ifn
	}
	return fmt.Sprintf("%s%.5s%04x-%s", netns.Prefix, name, nameHash(name)&0xffff, tail)
}

func nameHash(name string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(name))
	return h.Sum32()
}

// Addrs returns the IPv4 and IPv6 addresses of host r of testbed name:
// 10.X.Y.1 and fd00:776c:0:XXYY::1 for the client, .2 and ::2 for the
// server, where X.Y are two bytes of a hash of name.
func Addrs(name string, r Role) (v4, v6 netip.Addr) {
	h := nameHash(name)
	x, y := byte(h>>8), byte(h)
	host := byte(1)
	if r == Server {
		host = 2
	}
	v4 = netip.AddrFrom4([4]byte{10, x, y, host})
	v6 = netip.AddrFrom16([16]byte{0xfd, 0x00, 0x77, 0x6c, 0, 0, x, y, 15: host})
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
