package lab

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"wanlab/bridgeport"
	"wanlab/packetsock"
	"wanlab/router"
)

// DefaultBridgeName is the name of a bridge when none is given.
const DefaultBridgeName = "bridge"

// CheckBridge reports whether Bridge can join o.Ports, without changing
// anything: the options (those of the hosts, which a bridge has none of,
// are refused, saying why), the name (one that runs already is refused),
// and the two interfaces as bridgeport.Inspect sees them and
// bridgeport.Check judges them. Its errors are ErrBadInput. With o.Force,
// warnings say what the machine loses while wanlab holds ports it uses.
// A port left changed by a bridge that was killed is judged as it is: the
// caller gives such ports back first (bridgeport.RestoreStale), as Bridge
// does.
func CheckBridge(o Options) (warnings []string, err error) {
	o = o.withBridgeDefaults()
	if err := o.Check(); err != nil {
		return nil, err
	}
	for _, h := range []struct {
		given bool
		what  string
	}{
		{o.CC != "", "a congestion control"},
		{o.TCPRmem != "" || o.TCPWmem != "", "TCP buffer sizes (tcp_rmem, tcp_wmem)"},
		{o.ECN != 0, "ECN"},
		{o.DataPlane != TUNPlane, "a data plane"},
	} {
		if h.given {
			return nil, bad(fmt.Errorf("bridge %s: %s is a setting of the testbed's hosts, and a bridge has none: the machines on its ports choose their own", o.Name, h.what))
		}
	}
	if o.Ports[0] == "" || o.Ports[1] == "" {
		return nil, bad(fmt.Errorf("bridge %s: give two interfaces, IF1 and IF2", o.Name))
	}
	if running, _ := Running(); slices.Contains(running, o.Name) {
		return nil, bad(fmt.Errorf("%s is running already: give another --name, or stop it first with `wanlab down %s`", o.Name, o.Name))
	}
	var st [2]bridgeport.State
	for i, ifn := range o.Ports {
		if st[i], err = bridgeport.Inspect(nil, ifn); err != nil {
			return nil, refusal(err)
		}
	}
	warnings, err = bridgeport.Check(st[0], st[1], o.Force)
	return warnings, refusal(err)
}

// refusal marks bridgeport's refusals as bad input.
func refusal(err error) error {
	var re *bridgeport.RefusedError
	if errors.As(err, &re) {
		return bad(err)
	}
	return err
}

// withBridgeDefaults is withDefaults with a bridge's name.
func (o Options) withBridgeDefaults() Options {
	if o.Name == "" {
		o.Name = DefaultBridgeName
	}
	return o
}

// Bridge runs the router between the two existing Ethernet interfaces
// o.Ports of the calling process's own namespace, as `wanlab bridge IF1
// IF2` does: Up carries what arrives on the first out of the second, Down
// the reverse. First it gives back the ports of bridges that were killed
// (bridgeport.RestoreStale, telling o.Logf what it restored), and checks
// o as CheckBridge does, refusing with an ErrBadInput error before it
// changes anything; a caller that wants the warnings of o.Force calls
// CheckBridge first. Then it registers the bridge under o.Name (a testbed
// without namespaces, whose control socket answers status, set and down
// as a testbed's does, and refuses to run programs), takes both ports
// (bridgeport.Take) and opens a packet socket on each. Close gives the
// ports back; if the process is killed, the next Bridge or `wanlab down`
// does.
//
// Frames that are not IP packets (ARP) cross at once, unshaped; IP
// packets, NDP's among them, cross the chains (see package router).
func Bridge(ctx context.Context, o Options) (*Testbed, error) {
	o = o.withBridgeDefaults()
	notes, err := bridgeport.RestoreStale()
	for _, n := range notes {
		if o.Logf != nil {
			o.Logf("bridge %s: %s", o.Name, n)
		}
	}
	if err != nil {
		return nil, err
	}
	if _, err := CheckBridge(o); err != nil {
		return nil, err
	}
	o.DataPlane = PacketPlane
	return start(ctx, o, Info{Name: o.Name}, (*Testbed).buildBridge)
}

// buildBridge takes the ports and opens their packet sockets.
func (t *Testbed) buildBridge(interrupted func() error) error {
	who := fmt.Sprintf("wanlab bridge %s %s (--name %s)", t.opts.Ports[0], t.opts.Ports[1], t.opts.Name)
	for _, ifn := range t.opts.Ports {
		if err := interrupted(); err != nil {
			return err
		}
		p, err := bridgeport.Take(nil, ifn, who)
		if err != nil {
			// Held by another bridge now, or with a clsact since
			// CheckBridge looked: refused, nothing of it changed.
			return refusal(err)
		}
		t.ports = append(t.ports, p)
		dev, err := packetsock.Open(nil, ifn, packetsock.Options{})
		if err != nil {
			return err
		}
		t.devs = append(t.devs, dev)
		t.rings = append(t.rings, router.PacketRing(dev))
	}
	return nil
}

// portInfos describes ports as they are now.
func portInfos(ports []*bridgeport.Port) []PortInfo {
	out := make([]PortInfo, len(ports))
	for i, p := range ports {
		st, err := p.State()
		if err != nil {
			out[i] = PortInfo{IfName: p.Name(), Err: err.Error()}
			continue
		}
		out[i] = PortInfo{IfName: st.Name, MAC: st.MAC, MTU: st.MTU, Promiscuity: st.Promiscuity}
	}
	return out
}

// noHosts refuses what needs a testbed's hosts (running programs in them,
// a run borrowing them) on a bridge, which has none; nil on a testbed.
func (t *Testbed) noHosts(what string) error {
	if len(t.ports) == 0 {
		return nil
	}
	return fmt.Errorf("%s is a bridge between %s (wanlab bridge), which has no hosts to %s: run programs on the machines on its ports", t.opts.Name, strings.Join(t.opts.Ports[:], " and "), what)
}
