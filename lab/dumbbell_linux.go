package lab

import (
	"net/netip"

	"wanlab/link"
	"wanlab/qdisc"
	"wanlab/router"
)

// dumbbellConfig makes cfg a router of many hosts (Config.Clients and
// Servers) in place of its Client and Server: every host with its device,
// its addresses and its access links, whose seeds derive from the run's
// as the bottlenecks' do, by the link's name ("up:c2").
func (t *Testbed) dumbbellConfig(cfg *router.Config) {
	cfg.Client, cfg.Server, cfg.ClientIf, cfg.ServerIf, cfg.UpRing, cfg.DownRing = nil, nil, "", "", nil, nil
	for k, r := range t.opts.Roles() {
		hi := t.info.Host(r)
		h := router.Host{
			Name:   r.Host(),
			Device: t.devs[k],
			If:     t.devs[k].Name(),
			Addrs:  []netip.Addr{hi.Addr4, hi.Addr6},
			Up:     t.accessConfig(r, "up"),
			Down:   t.accessConfig(r, "down"),
			Ring:   t.rings[k],
		}
		if h.Name.Server {
			cfg.Servers = append(cfg.Servers, h)
		} else {
			cfg.Clients = append(cfg.Clients, h)
		}
	}
}

// accessConfig returns host r's access link in direction dir, nil if it
// has none.
func (t *Testbed) accessConfig(r Role, dir string) *link.Config {
	chain, ok := t.opts.access(r, dir)
	if !ok {
		return nil
	}
	name := r.Host().LinkName(dir)
	return &link.Config{Name: name, Chain: chain, Env: qdisc.Env{Seed: link.DirectionSeed(t.opts.Seed, name)}}
}
