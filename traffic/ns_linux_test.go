package traffic

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"wanlab/internal/traffictest"
)

// In a namespace of its own, a TCP flow and a UDP probe stream over IPv4
// and IPv6 carry their TOS on the wire, on every packet both ways, as a
// packet socket on the namespace's loopback device sees them.
func TestTOSOnTheWireInNamespace(t *testing.T) {
	h, sn := traffictest.SniffedNamespace(t)
	noLeaks(t)
	var flows []Flow
	for _, addr := range []netip.Addr{lo4, lo6} {
		host := Host{Net: InNamespace(h), Addr: addr}
		flows = append(flows,
			traffictest.Must(t, NewTCP, TCPConfig{Label: "tcp " + addr.String(), Client: host, Server: host, CC: "reno", TOS: 0xb8, Bytes: 1 << 20, Stop: 500 * time.Millisecond}),
			traffictest.Must(t, NewUDPProbe, UDPProbeConfig{Label: "udp " + addr.String(), Client: host, Server: host, TOS: 0x20, Interval: 50 * time.Millisecond, Stop: 500 * time.Millisecond}))
	}
	res, err := Run(context.Background(), Plan{Step: 100 * time.Millisecond, Length: 600 * time.Millisecond, Flows: flows})
	if err != nil {
		t.Fatal(err)
	}
	sn.Close()
	for i, fr := range res.Flows {
		switch r := fr.(type) {
		case *TCPResult:
			if !r.Complete || r.ReceivedBytes != 1<<20 {
				t.Errorf("%s: complete %v, %d bytes", r.Label, r.Complete, r.ReceivedBytes)
			}
			seen := sn.SeenDSCP(r.Sender.Local.Port(), r.Sender.Remote.Port())
			// The handshake, the data and the acknowledgements: all EF.
			if len(seen) != 1 || seen[0xb8] < 6 {
				t.Errorf("%s: TOS on the wire (TOS: packets) %v, want only 0xb8", r.Label, seen)
			}
		case *ProbeResult:
			checkAnswered(t, r, 10, 0x20)
			srv := flows[i].(*UDPProbe).server.LocalAddr().(*net.UDPAddr).AddrPort()
			cl := AddrPort(flows[i].(*UDPProbe).client.LocalAddr())
			seen := sn.SeenDSCP(cl.Port(), srv.Port())
			if len(seen) != 1 || seen[0x20] < 20 {
				t.Errorf("%s: TOS on the wire (TOS: packets) %v, want 20 or more of 0x20 only", r.Label, seen)
			}
		}
	}
}
