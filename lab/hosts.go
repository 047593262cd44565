package lab

import (
	"errors"
	"fmt"

	"wanlab/link"
	"wanlab/qdisc"
	"wanlab/tcspec"
)

// Access is a host's access link in one direction (Options.Access): Dir
// "up" or "down", Chain root first, empty for a direct access link (the
// host has a link of its own, which only counts its packets). A client's
// up link leads into the up bottleneck and its down link out of the down
// one; a server's the other way round.
type Access struct {
	Host  link.Host
	Dir   string
	Chain []qdisc.Spec
}

// hostCount returns how many clients and servers o makes.
func (o Options) hostCount() (clients, servers int) {
	return max(o.Clients, 1), max(o.Servers, 1)
}

// Roles returns the hosts o makes, the clients first: Client, c2, ...,
// Server, s2, ....
func (o Options) Roles() []Role {
	nc, ns := o.hostCount()
	roles := make([]Role, 0, nc+ns)
	for _, side := range []struct {
		server bool
		n      int
	}{{false, nc}, {true, ns}} {
		for n := 1; n <= side.n; n++ {
			roles = append(roles, HostRole(link.Host{Server: side.server, N: n}))
		}
	}
	return roles
}

// dumbbell reports whether o needs the router's dumbbell of many hosts
// (router.Config.Clients and Servers): more than one host on a side, or
// an access link. Otherwise the testbed is the two hosts it always was,
// at their cost.
func (o Options) dumbbell() bool {
	nc, ns := o.hostCount()
	return nc > 1 || ns > 1 || len(o.Access) > 0
}

// access returns host r's access chain in direction dir, and whether it
// has one.
func (o Options) access(r Role, dir string) ([]qdisc.Spec, bool) {
	for _, a := range o.Access {
		if a.Host == r.Host() && a.Dir == dir {
			return a.Chain, true
		}
	}
	return nil, false
}

// hostCC returns host r's congestion control: HostCC's, else CC.
func (o Options) hostCC(r Role) string {
	if cc, ok := o.HostCC[r.Host()]; ok {
		return cc
	}
	return o.CC
}

// checkHosts checks the hosts' count, access links and congestion
// controls.
func (o Options) checkHosts() error {
	for _, n := range []struct {
		what string
		n    int
	}{{"clients", o.Clients}, {"servers", o.Servers}} {
		if n.n < 0 || n.n > link.MaxHosts {
			return fmt.Errorf("%d %s: give 1 to %d (0 is 1)", n.n, n.what, link.MaxHosts)
		}
	}
	nc, ns := o.hostCount()
	seen := map[string]bool{}
	for _, a := range o.Access {
		if a.Dir != "up" && a.Dir != "down" {
			return fmt.Errorf("access link of %s: direction %q is unknown: use up or down", a.Host, a.Dir)
		}
		if err := checkHost(a.Host, nc, ns); err != nil {
			return fmt.Errorf("access link %s: %w", a.Host.LinkName(a.Dir), err)
		}
		name := a.Host.LinkName(a.Dir)
		if seen[name] {
			return fmt.Errorf("access link %s is given twice: keep one", name)
		}
		seen[name] = true
		if err := CheckChain(a.Chain); err != nil {
			return fmt.Errorf("access link %s %q: %w", name, tcspec.FormatChain(a.Chain), err)
		}
	}
	for h, cc := range o.HostCC {
		if err := checkHost(h, nc, ns); err != nil {
			return fmt.Errorf("congestion control of %s: %w", h, err)
		}
		if cc == "" {
			return fmt.Errorf("congestion control of %s is empty: name one (reno, cubic, bbr, ...), or leave the host out", h)
		}
		if err := checkCCName(cc); err != nil {
			return fmt.Errorf("%s: %w", h, err)
		}
	}
	return nil
}

// checkHost reports whether h is one of nc clients and ns servers, and a
// host at all.
func checkHost(h link.Host, nc, ns int) error {
	if h.N < 1 || h.N > link.MaxHosts {
		return fmt.Errorf("host %s: hosts are numbered 1 to %d", h, link.MaxHosts)
	}
	return h.Check(nc, ns)
}

// checkHostCCs checks, against the kernel, the congestion control of
// every host that has its own.
func (o Options) checkHostCCs() error {
	var errs []error
	for _, r := range o.Roles() {
		if cc, ok := o.HostCC[r.Host()]; ok {
			if err := CheckCC(cc); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", r.Host(), err))
			}
		}
	}
	return errors.Join(errs...)
}

// infoOf returns the Info of a testbed that o makes, on its plane.
func (o Options) infoOf() Info {
	i := InfoOf(o.Name)
	if o.dumbbell() {
		for _, r := range o.Roles() {
			h := HostInfoOf(o.Name, r)
			h.Name = r
			if c, ok := o.access(r, "up"); ok {
				h.AccessUp = accessText(c)
			}
			if c, ok := o.access(r, "down"); ok {
				h.AccessDown = accessText(c)
			}
			h.CC = o.HostCC[r.Host()]
			switch r {
			case Client:
				i.Client = h
			case Server:
				i.Server = h
			}
			i.Hosts = append(i.Hosts, h)
		}
	}
	return i.onPlane(o.DataPlane)
}

// accessText writes an access chain in tc syntax, "direct" for an empty
// one (a link that only counts).
func accessText(c []qdisc.Spec) string {
	if len(c) == 0 {
		return "direct"
	}
	return tcspec.FormatChain(c)
}
