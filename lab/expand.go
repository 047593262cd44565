package lab

import "strings"

// ExpandPeer replaces the words "@peer" and "@peer6" in args (also inside
// a longer argument such as "http://@peer:8080/") with the IPv4 and IPv6
// address of the host that is not r. An "@peer" followed by a letter,
// digit or '_' is left alone.
func ExpandPeer(args []string, i Info, r Role) []string {
	peer := i.Host(r.Peer())
	out := make([]string, len(args))
	for k, a := range args {
		var b strings.Builder
		for {
			j := strings.Index(a, "@peer")
			if j < 0 {
				b.WriteString(a)
				break
			}
			b.WriteString(a[:j])
			rest := a[j+len("@peer"):]
			word, addr := "@peer", peer.Addr4.String()
			if strings.HasPrefix(rest, "6") {
				word, addr, rest = "@peer6", peer.Addr6.String(), rest[1:]
			}
			if rest != "" && isWordChar(rest[0]) {
				b.WriteString(word)
			} else {
				b.WriteString(addr)
			}
			a = rest
		}
		out[k] = b.String()
	}
	return out
}

func isWordChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}
