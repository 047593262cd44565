package lab

import (
	"strings"
	"testing"

	"wanlab/netns"
)

func TestIfNameFitsAndIsStable(t *testing.T) {
	for _, name := range []string{"lab", "a", "ninechars", "tenchars10", "a-very-long-testbed-name-of-32b", strings.Repeat("x", 32)} {
		for _, r := range []Role{Client, Server} {
			ifn := IfName(name, r)
			if err := netns.CheckIfName(ifn); err != nil {
				t.Errorf("IfName(%q, %s) = %q: %v", name, r, ifn, err)
			}
			if !strings.HasPrefix(ifn, netns.Prefix) || !strings.HasSuffix(ifn, "-"+r.short()+"0") {
				t.Errorf("IfName(%q, %s) = %q, want wl-...-%s0", name, r, ifn, r.short())
			}
			if IfName(name, r) != ifn {
				t.Errorf("IfName(%q, %s) is not deterministic", name, r)
			}
		}
	}
	if got := IfName("lab", Client); got != "wl-lab-c0" {
		t.Errorf("IfName(lab, client) = %q, want wl-lab-c0", got)
	}
	if got := IfName("ninechars", Server); got != "wl-ninechars-s0" {
		t.Errorf("IfName(ninechars, server) = %q, want wl-ninechars-s0", got)
	}
	// Long names that share a prefix still get different devices.
	if a, b := IfName("experiment-1", Client), IfName("experiment-2", Client); a == b {
		t.Errorf("IfName gives both experiment-1 and experiment-2 %q", a)
	}
}

// TestRouterIfName: the router's ends of the packet plane's veth pairs
// fit, differ from the hosts' ends and from each other, and show whose
// they are.
func TestRouterIfName(t *testing.T) {
	for _, name := range []string{"lab", "ninechars", strings.Repeat("x", 32)} {
		c, s := RouterIfName(name, Client), RouterIfName(name, Server)
		for _, ifn := range []string{c, s} {
			if err := netns.CheckIfName(ifn); err != nil {
				t.Errorf("RouterIfName(%q) = %q: %v", name, ifn, err)
			}
		}
		if c == s || c == IfName(name, Client) || !strings.HasSuffix(c, "-rc") || !strings.HasSuffix(s, "-rs") {
			t.Errorf("RouterIfName(%q) = %q, %q; want two names ending -rc and -rs", name, c, s)
		}
	}
	if got := RouterIfName("lab", Server); got != "wl-lab-rs" {
		t.Errorf("RouterIfName(lab, server) = %q, want wl-lab-rs", got)
	}
	if got := RouterNamespaceName("lab"); got != "wl-lab-r" {
		t.Errorf("RouterNamespaceName(lab) = %q, want wl-lab-r", got)
	}
}

func TestAddrs(t *testing.T) {
	c4, c6 := Addrs("lab", Client)
	s4, s6 := Addrs("lab", Server)
	if !c4.Is4() || !c6.Is6() || !s4.Is4() || !s6.Is6() {
		t.Fatalf("Addrs(lab) = %v %v %v %v, want v4, v6 pairs", c4, c6, s4, s6)
	}
	a, b := c4.As4(), s4.As4()
	if a[0] != 10 || a[3] != 1 || b[3] != 2 || a[1] != b[1] || a[2] != b[2] {
		t.Errorf("IPv4 pair %v ↔ %v, want 10.X.Y.1 ↔ 10.X.Y.2", c4, s4)
	}
	if !c6.IsPrivate() || c6.Next() != s6 {
		t.Errorf("IPv6 pair %v ↔ %v, want fd00:...::1 ↔ ::2", c6, s6)
	}
	if strings.HasSuffix(c6.String(), "::1") == false {
		t.Errorf("client IPv6 %v should end in ::1", c6)
	}
	other, _ := Addrs("another", Client)
	if other == c4 {
		t.Errorf("testbeds lab and another share %v; the hash should separate them", c4)
	}
}

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"lab", "a", "t_1-b", strings.Repeat("z", 32)} {
		if err := CheckName(ok); err != nil {
			t.Errorf("CheckName(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", "Lab", "a b", "x/y", strings.Repeat("z", 33), "é", "-x", "--all", "-"} {
		if err := CheckName(bad); err == nil {
			t.Errorf("CheckName(%q) = nil, want an error", bad)
		}
	}
}

func TestParseRole(t *testing.T) {
	for in, want := range map[string]Role{"client": Client, "c": Client, "server": Server, "s": Server} {
		if got, err := ParseRole(in); err != nil || got != want {
			t.Errorf("ParseRole(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseRole("router"); err == nil || !strings.Contains(err.Error(), "client or server") {
		t.Errorf("ParseRole(router) = %v, want an error naming client or server", err)
	}
}

func TestExpandPeer(t *testing.T) {
	i := InfoOf("lab")
	p4, p6 := i.Server.Addr4.String(), i.Server.Addr6.String()
	got := ExpandPeer([]string{"ping", "-c3", "@peer", "@peer6", "http://@peer:80/", "@peers", "me@peer_x", "@peer6@peer"}, i, Client)
	want := []string{"ping", "-c3", p4, p6, "http://" + p4 + ":80/", "@peers", "me@peer_x", p6 + p4}
	for k := range want {
		if got[k] != want[k] {
			t.Errorf("arg %d: got %q, want %q", k, got[k], want[k])
		}
	}
	if back := ExpandPeer([]string{"@peer"}, i, Server); back[0] != i.Client.Addr4.String() {
		t.Errorf("from the server, @peer = %q, want the client's %v", back[0], i.Client.Addr4)
	}
}

func TestWithEnv(t *testing.T) {
	got := withEnv([]string{"A=1", "WANLAB_HOST=old", "B=2"}, []string{"WANLAB_HOST=client", "C=3"})
	want := "A=1 B=2 WANLAB_HOST=client C=3"
	if strings.Join(got, " ") != want {
		t.Errorf("withEnv = %q, want %q", got, want)
	}
}

// TestCheckNameQuotesTheCharacter: a refused name is quoted as given, and
// the character at fault shown whole, however many bytes it takes.
func TestCheckNameQuotesTheCharacter(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"café", `testbed name "café": character 'é' (U+00E9) is not allowed`},
		{"lab☃x", `testbed name "lab☃x": character '☃' (U+2603) is not allowed`},
		{"Lab", `testbed name "Lab": character 'L' (U+004C) is not allowed`},
		{"a\tb", `testbed name "a\tb": character '\t' (U+0009) is not allowed`},
		{"x\xffy", `testbed name "x\xffy": byte 0xff, which is not UTF-8, is not allowed`},
	} {
		err := CheckName(c.name)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || !strings.Contains(err.Error(), "use a-z, 0-9, '-', '_'") {
			t.Errorf("CheckName(%q) = %v, want %s (use a-z, 0-9, '-', '_')", c.name, err, c.want)
		}
	}
}
