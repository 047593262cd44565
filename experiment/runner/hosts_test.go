package runner

import (
	"strings"
	"testing"

	"wanlab/experiment"
	"wanlab/link"
)

// TestHostKeysTakeVariables: an experiment file gives a dumbbell's hosts
// with clients, servers, access_up and access_down (lists of HOST=CHAIN
// that variables fill) and host_cc, as `wanlab run`'s flags do; a host the counts lack is an error
// at its key's line.
func TestHostKeysTakeVariables(t *testing.T) {
	const file = `
name: dumbbell
vars:
  rtt: [10ms, 40ms]
  far: [s1, s2]
path:
  up: "tbf rate 10mbit burst 32k latency 50ms"
tests:
  - test: tcp_upload
    duration: 2s
    clients: 3
    servers: 2
    access_up: ["c2=netem delay ${rtt}", "${far}=netem delay 5ms"]
    access_down: [c3=]
    host_cc: [c3=bbr]
`
	b := New(Config{})
	p, err := experiment.Load("dumbbell.yaml", []byte(file), experiment.LoadOptions{Backend: b})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Cases) != 4 {
		t.Fatalf("%d cases, want 4", len(p.Cases))
	}
	for _, c := range p.Cases {
		r := c.Runs[0]
		setup, x, err := b.prepare(r, "")
		if err != nil {
			t.Fatalf("%v: %v", c.Vars, err)
		}
		h := setup.Hosts
		rtt, far := c.Vars[0].Value, c.Vars[1].Value
		if h.Clients != 3 || h.Servers != 2 || len(h.Access) != 3 || h.Access[1].Host.String() != far || h.HostCC[link.Host{N: 3}] != "bbr" {
			t.Errorf("%v: hosts %+v", c.Vars, h)
		}
		if argv := strings.Join(x.argv, " "); !strings.Contains(argv, "--access-up c2=netem delay "+rtt) || !strings.Contains(argv, "--clients 3 --servers 2") {
			t.Errorf("%v: argv %s", c.Vars, argv)
		}
	}
	bad := strings.Replace(file, "[c3=]", "[c4=]", 1)
	_, err = experiment.Load("dumbbell.yaml", []byte(bad), experiment.LoadOptions{Backend: b})
	if err == nil || !strings.Contains(err.Error(), "access_down") || !strings.Contains(err.Error(), "there are 3 clients (c1..c3)") {
		t.Errorf("c4 of 3 clients: %v; want an error at access_down naming c1..c3", err)
	}
}
