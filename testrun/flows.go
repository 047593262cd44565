package testrun

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"time"

	"wanlab/catalog"
	"wanlab/link"
	"wanlab/traffic"
	"wanlab/traffic/quicflow"
	"wanlab/traffic/scalableflow"
	"wanlab/traffic/tfrcflow"
)

// flowSpec is what the document needs to know of a flow beyond its
// result: its series name, direction, protocol and marking, and the
// sockets it made (for matching it to the router's flows).
type flowSpec struct {
	label    string
	dir      string // "up", "down", or "both" for a round-trip probe
	protocol string // "tcp", "udp", "icmp"
	tos      int
	cc       string // the congestion control asked for
	// client and server are the hosts it ran between ("c1", "s2").
	client, server string
	sockets        *recNet
	// icmpID is an ICMP probe stream's echo identifier.
	icmpID *uint16
}

// ecnECT0 and ecnECT1 are the ECN field's ECT(0) and ECT(1) codepoints
// in a TOS byte (RFC 3168; ECT(1) is L4S's, RFC 9331).
const (
	ecnECT0 = 0x02
	ecnECT1 = 0x01
)

// flows builds the traffic of the test, each flow and probe between the
// hosts the catalog gives it (host returns a host of the testbed, or an
// error when it has no such host): its load flows during the load, its
// probes over the whole run.
func (s *Setup) flows(host func(link.Host) (traffic.Host, error)) ([]traffic.Flow, []flowSpec, error) {
	var (
		fs    []traffic.Flow
		specs []flowSpec
	)
	end := s.Length()
	tosOf := func(m catalog.Mark) int {
		if m == catalog.BE && s.TOS >= 0 {
			return s.TOS
		}
		return int(m.TOS())
	}
	for _, f := range s.Test.Flows {
		ch, sh := f.Hosts()
		client, server, err := hostPair(host, ch, sh)
		if err != nil {
			return nil, nil, err
		}
		dir := traffic.Up
		if f.Dir == catalog.Down {
			dir = traffic.Down
		}
		rec := &recNet{}
		cl, sv := client, server
		cl.Net, sv.Net = rec.wrap(client.Net), rec.wrap(server.Net)
		// The flow's times in the test's schedule: the load's, or its
		// own (tcp_2up_square's flows start DELAY apart).
		start, stop := f.Start.At(s.Delay, s.Duration), f.Stop.At(s.Delay, s.Duration)
		spec := flowSpec{label: f.Series, dir: f.Dir.String(), tos: tosOf(f.Mark), client: ch.String(), server: sh.String(), sockets: rec}
		switch f.Transport {
		case catalog.TCP:
			cc := s.CCUp
			if dir == traffic.Down {
				cc = s.CCDown
			}
			if cc == "" {
				cc = f.CC
			}
			spec.protocol, spec.cc = "tcp", cc
			flow, err := traffic.NewTCP(traffic.TCPConfig{
				Label: f.Series, Client: cl, Server: sv, Dir: dir, CC: cc, TOS: spec.tos,
				SendBuffer: s.Opts.SendBuffer, ReceiveBuffer: s.Opts.ReceiveBuffer,
				Start: start, Stop: stop,
			})
			if err != nil {
				return nil, nil, err
			}
			fs = append(fs, flow)
		case catalog.UDPFlood:
			if s.Opts.ECN {
				spec.tos |= ecnECT0
			}
			spec.protocol = "udp"
			flow, err := traffic.NewFlood(traffic.FloodConfig{
				Label: f.Series, Client: cl, Server: sv, Dir: dir,
				Rate: s.UDPRate, Size: s.Opts.UDPSize, TOS: spec.tos,
				Start: start, Stop: stop,
			})
			if err != nil {
				return nil, nil, err
			}
			fs = append(fs, flow)
		case catalog.TFRC:
			spec.protocol, spec.cc = "udp", "tfrc"
			flow, err := tfrcflow.New(tfrcflow.Config{
				Label: f.Series, Client: cl, Server: sv, Dir: dir, TOS: spec.tos,
				TxQueueLen: s.TxQLen, Start: start, Stop: stop,
			})
			if err != nil {
				return nil, nil, err
			}
			fs = append(fs, flow)
		case catalog.Scalable:
			// The sender sets ECT(1) on its data itself: the flow takes
			// the DSCP alone, and the data's TOS is recorded as sent.
			spec.protocol, spec.cc, spec.tos = "udp", scalableflow.CongestionControl, spec.tos&^3|ecnECT1
			flow, err := scalableflow.New(scalableflow.Config{
				Label: f.Series, Client: cl, Server: sv, Dir: dir, TOS: spec.tos,
				Start: start, Stop: stop,
			})
			if err != nil {
				return nil, nil, err
			}
			fs = append(fs, flow)
		case catalog.QUIC:
			// quic-go sets the ECN field of each packet itself: the
			// flow takes the DSCP alone.
			spec.protocol, spec.cc, spec.tos = "udp", quicflow.CongestionControl, spec.tos&^3
			flow, err := quicflow.New(quicflow.Config{
				Label: f.Series, Client: cl, Server: sv, Dir: dir, TOS: spec.tos,
				Start: start, Stop: stop,
			})
			if err != nil {
				return nil, nil, err
			}
			fs = append(fs, flow)
		}
		specs = append(specs, spec)
	}
	for j, p := range s.Test.Probes {
		ch, sh := p.Hosts()
		client, server, err := hostPair(host, ch, sh)
		if err != nil {
			return nil, nil, err
		}
		spec := flowSpec{label: p.Series, dir: "both", tos: tosOf(p.Mark), client: ch.String(), server: sh.String(), sockets: &recNet{}}
		offset := s.probeOffset(j)
		switch p.Kind {
		case catalog.ICMP:
			spec.protocol = "icmp"
			flow, err := traffic.NewICMPProbe(traffic.ICMPProbeConfig{
				Label: p.Series, Client: client, Target: server.Addr, Interval: s.Step,
				TOS: spec.tos, Start: offset, Stop: end,
			})
			if err != nil {
				return nil, nil, err
			}
			id := flow.ID()
			spec.icmpID = &id
			fs = append(fs, flow)
		case catalog.UDP:
			spec.protocol = "udp"
			cl, sv := client, server
			cl.Net, sv.Net = spec.sockets.wrap(client.Net), spec.sockets.wrap(server.Net)
			flow, err := traffic.NewUDPProbe(traffic.UDPProbeConfig{
				Label: p.Series, Client: cl, Server: sv, Interval: s.Step,
				TOS: spec.tos, Start: offset, Stop: end,
			})
			if err != nil {
				return nil, nil, err
			}
			fs = append(fs, flow)
		}
		specs = append(specs, spec)
	}
	return fs, specs, nil
}

// hostPair returns the testbed's hosts c and s.
func hostPair(host func(link.Host) (traffic.Host, error), c, s link.Host) (traffic.Host, traffic.Host, error) {
	client, err := host(c)
	if err != nil {
		return client, traffic.Host{}, err
	}
	server, err := host(s)
	return client, server, err
}

// probeOffset is when probe stream j of the test sends its first probe:
// between the grid points, each stream at its own offset, so that a probe
// shares its instant neither with the readings of the router and the flows
// at the grid points (which hold the router's loops for a moment) nor with
// another stream's probe. The n streams are spread evenly: stream j sends
// at (2j+1)/(2n) of each step.
func (s *Setup) probeOffset(j int) time.Duration {
	n := len(s.Test.Probes)
	return s.Step * time.Duration(2*j+1) / time.Duration(2*n)
}

// recNet records the connected sockets a flow's hosts make (local and
// remote address), so that the flow can be found among the router's
// 5-tuples whatever its generator reports about itself.
type recNet struct {
	mu    sync.Mutex
	conns [][2]netip.AddrPort
}

// wrap returns a Net that makes its sockets with n and records them in r.
func (r *recNet) wrap(n traffic.Net) traffic.Net { return recordingNet{n, r} }

func (r *recNet) record(c net.Conn) {
	local, remote := traffic.AddrPort(c.LocalAddr()), traffic.AddrPort(c.RemoteAddr())
	r.mu.Lock()
	r.conns = append(r.conns, [2]netip.AddrPort{local, remote})
	r.mu.Unlock()
}

// connected returns the recorded sockets, local address first.
func (r *recNet) connected() [][2]netip.AddrPort {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][2]netip.AddrPort(nil), r.conns...)
}

type recordingNet struct {
	traffic.Net
	rec *recNet
}

func (n recordingNet) Dial(ctx context.Context, network, laddr, raddr string, control traffic.Control) (net.Conn, error) {
	c, err := n.Net.Dial(ctx, network, laddr, raddr, control)
	if err == nil {
		n.rec.record(c)
	}
	return c, err
}
