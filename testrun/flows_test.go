package testrun

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"testing"

	"wanlab/link"
	"wanlab/traffic"
)

// Each flow and probe of an rtt_fair test makes its sockets on the hosts
// the catalog gives it, and its spec records them for the document.
func TestFlowsOnTheirHosts(t *testing.T) {
	s := handSetup(t, "rtt_fair4be")
	var asked []string
	host := func(h link.Host) (traffic.Host, error) {
		asked = append(asked, h.String())
		n := h.N
		if h.Server {
			n += 100
		}
		return traffic.Host{Net: traffic.Local{}, Addr: netip.AddrFrom4([4]byte{10, 0, 0, byte(n)})}, nil
	}
	flows, specs, err := s.flows(host)
	if err != nil {
		t.Fatal(err)
	}
	if len(flows) != 12 || len(specs) != 12 {
		t.Fatalf("%d flows, %d specs; want 8 flows and 4 pings", len(flows), len(specs))
	}
	var got, want []string
	for _, sp := range specs {
		got = append(got, sp.label+": "+sp.client+">"+sp.server)
	}
	for i := 1; i <= 4; i++ {
		want = append(want, fmt.Sprintf("TCP upload BE%d s%d: c1>s%d", i, i, i), fmt.Sprintf("TCP download BE%d s%d: c1>s%d", i, i, i))
	}
	for i := 1; i <= 4; i++ {
		want = append(want, fmt.Sprintf("Ping (ms) ICMP%d s%d: c1>s%d", i, i, i))
	}
	if !slices.Equal(got, want) {
		t.Errorf("specs:\n got %q\nwant %q", got, want)
	}
	if !slices.Equal(asked[:4], []string{"c1", "s1", "c1", "s1"}) || asked[len(asked)-1] != "s4" {
		t.Errorf("hosts asked for: %v", asked)
	}

	// A host the testbed lacks fails the run with the bed's error.
	missing := errors.New("no s3")
	_, _, err = s.flows(func(h link.Host) (traffic.Host, error) {
		if h.String() == "s3" {
			return traffic.Host{}, missing
		}
		return host(h)
	})
	if !errors.Is(err, missing) {
		t.Errorf("a missing host: %v", err)
	}

	// A test of one host pair runs between c1 and s1.
	s = handSetup(t, "rrul")
	if _, specs, err = s.flows(host); err != nil {
		t.Fatal(err)
	}
	for _, sp := range specs {
		if sp.client != "c1" || sp.server != "s1" {
			t.Errorf("rrul: %s runs %s>%s", sp.label, sp.client, sp.server)
		}
	}
}
