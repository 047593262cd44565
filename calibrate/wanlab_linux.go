package calibrate

import (
	"context"

	"wanlab/lab"
	"wanlab/qdisc"
	"wanlab/traffic"
	"wanlab/tun"
)

// wanlabPath is a testbed as `wanlab up` makes it, on the data plane
// plane, the chain on the client-to-server direction.
type wanlabPath struct{ t *lab.Testbed }

func newWanlabPath(ctx context.Context, name string, chain []qdisc.Spec, plane lab.DataPlane) (*wanlabPath, error) {
	t, err := lab.Up(ctx, lab.Options{Name: name, Up: chain, DataPlane: plane, DeviceKind: tun.VNet, Seed: 1})
	if err != nil {
		return nil, err
	}
	return &wanlabPath{t}, nil
}

func (p *wanlabPath) Client() traffic.Host {
	return traffic.Host{Net: traffic.InNamespace(p.t.Namespace(lab.Client)), Addr: p.t.Info().Client.Addr4}
}

func (p *wanlabPath) Server() traffic.Host {
	return traffic.Host{Net: traffic.InNamespace(p.t.Namespace(lab.Server)), Addr: p.t.Info().Server.Addr4}
}

// Counters returns the direction's drops (every discipline's, in wire
// segments) and the packets its root discipline sent.
func (p *wanlabPath) Counters() (drops, sent uint64, err error) {
	up := p.t.Snapshot().Up
	if len(up.Qdiscs) > 0 {
		sent = up.Qdiscs[0].Counters.Packets
	}
	return up.Counters.Dropped, sent, nil
}

// Classes returns each class's drops, as tc -s class show counts them.
func (p *wanlabPath) Classes() (map[string]uint64, error) {
	drops := map[string]uint64{}
	for _, c := range p.t.Snapshot().Up.Classes {
		drops[c.ClassID] = c.Counters.Dropped
	}
	return drops, nil
}

// Router returns the router's own delay on the direction so far.
func (p *wanlabPath) Router() *RouterDelay {
	up := p.t.Snapshot().Up
	ms := func(ns int64) float64 { return float64(ns) / 1e6 }
	return &RouterDelay{LatenessP50Ms: ms(up.Lateness.P50Ns), LatenessP99Ms: ms(up.Lateness.P99Ns), StallP99Ms: ms(up.Ring.Stall.P99Ns)}
}

func (p *wanlabPath) Close() error { return p.t.Close() }
