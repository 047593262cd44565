package lab

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
)

// TestRunSessionSetsBack: a session's changes are set back when its
// connection closes without an end request, as a killed process's does;
// one that can no longer be set back is reported by the end and listed in
// the status, which shows the testbed is no longer as it was set up.
func TestRunSessionSetsBack(t *testing.T) {
	tb := up(t, Options{Up: mustChain(t, "netem delay 5ms")})
	name := tb.Name()
	client := tb.Namespace(Client)
	const ecn = "net.ipv4.tcp_ecn"
	ecn0, err := client.Sysctl(ecn)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Borrow(name, []SysctlKey{{Client, ecn}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Set(ChainText{Dir: "up", Chain: "netem delay 30ms"}); err != nil {
		t.Fatal(err)
	}
	if err := client.SetSysctl(ecn, "1"); err != nil || ecn0 == "1" {
		t.Fatalf("setting %s=1 (was %s): %v", ecn, ecn0, err)
	}
	s.c.Close() // no end request: what the kernel does for a killed run
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, err := GetStatus(name, 1)
		v, _ := client.Sysctl(ecn)
		if err == nil && st.Up.Chain == "netem limit 1000 delay 5ms" && v == ecn0 && len(st.Changed) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("5 s after the session dropped: up chain %q, %s=%s, changed %q, %v; want netem limit 1000 delay 5ms, %s and nothing", st.Up.Chain, ecn, v, st.Changed, err, ecn0)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// A sysctl of a device that is gone by the end cannot be set back.
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "wl-sess-a"}, PeerName: "wl-sess-b"}
	if err := client.Netlink().LinkAdd(veth); err != nil {
		t.Fatal(err)
	}
	key := "net.ipv4.conf.wl-sess-a.forwarding"
	s, err = Borrow(name, []SysctlKey{{Client, key}})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.SetSysctl(key, "1"); err != nil {
		t.Fatal(err)
	}
	if err := client.Netlink().LinkDel(veth); err != nil {
		t.Fatal(err)
	}
	if _, err := s.End(); err == nil || !strings.Contains(err.Error(), key) {
		t.Errorf("End after the device went: %v; want an error naming %s", err, key)
	}
	st, err := GetStatus(name, 1)
	if err != nil || len(st.Changed) != 1 || !strings.Contains(st.Changed[0], key) {
		t.Errorf("status after a sysctl that could not be set back: changed %q, %v; want it named", st.Changed, err)
	}
	// A session is refused a key outside net.: the hosts share the rest.
	if _, err := Borrow(name, []SysctlKey{{Server, "kernel.hostname"}}); err == nil || !strings.Contains(err.Error(), "net.*") {
		t.Errorf("Borrow with kernel.hostname: %v; want it refused", err)
	}
	// A testbed that closes ends its sessions: there is nothing to give
	// back, and the borrower learns that it is gone.
	s, err = Borrow(name, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Set(ChainText{Dir: "up", Chain: ""}); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Set after the testbed closed: %v; want ErrNotRunning", err)
	}
	if _, err := s.End(); !errors.Is(err, ErrNotRunning) {
		t.Errorf("End after the testbed closed: %v; want ErrNotRunning", err)
	}
}
