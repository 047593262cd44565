package bridgeport

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"wanlab/netns"
)

// Port is an interface held by this process for the router: frames
// arriving there are dropped after the packet taps, IPv6 is off on it and
// it is up. Release gives it back.
type Port struct {
	s      *space
	rec    record
	path   string
	before State

	mu       sync.Mutex
	released bool
}

// Name is the interface's name when it was taken.
func (p *Port) Name() string { return p.before.Name }

// Index is the interface's index, which the router binds its packet
// socket to.
func (p *Port) Index() int { return p.before.Index }

// Before is the interface as it was before Take changed it.
func (p *Port) Before() State { return p.before }

// State returns the port as it is now (Inspect's view of it), found by
// its index, whatever it is called now.
func (p *Port) State() (State, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.released {
		return State{}, fmt.Errorf("bridgeport: %s was released", p.rec.where())
	}
	l, err := p.s.nl.LinkByIndex(p.before.Index)
	if err != nil {
		return State{}, fmt.Errorf("bridgeport: %s: %s: %w", p.s.label(), p.before.Name, err)
	}
	return p.s.inspectLink(l)
}

// Take readies the interface ifname in ns (nil: the calling process's own
// namespace) as a port of the router, for the calling process; who says
// what holds it ("wanlab bridge eth1 eth2"), for the refusal another
// process gets. It first writes a restore record (see the package
// documentation), then turns IPv6 off on the port, adds a clsact qdisc
// with a filter that drops every frame at ingress, and sets the port up.
// A Take that fails undoes what it did.
//
// It refuses, with a *RefusedError, a port that another live process
// holds (naming it), one that has a clsact or ingress qdisc already, and
// a restore record that is a link or a directory. A record of an owner
// that died is restored first. Take does not judge the port otherwise:
// Check does, before it.
func Take(ns *netns.Handle, ifname, who string) (*Port, error) {
	self, err := netns.Self()
	if err != nil {
		return nil, err
	}
	s, err := openSpace(ns)
	if err != nil {
		return nil, err
	}
	p, err := take(s, ifname, who, self)
	if err != nil {
		s.close()
		return nil, err
	}
	return p, nil
}

// Ignore makes the interface ifname in ns a port the kernel ignores, with
// the changes Take makes (IPv6 off, the drop filter at ingress, the port
// up), for an interface in a namespace the caller made and deletes with
// everything in it, as the router's namespace of a testbed on the packet
// plane: nothing is given back, so nothing is recorded, and Check does
// not apply (the caller made the interface for the router). It refuses a
// port that has a clsact or ingress qdisc already, as Take does. A nil ns
// is refused: the process's own namespace outlives it, and its ports are
// Take's.
func Ignore(ns *netns.Handle, ifname string) error {
	if ns == nil {
		return errors.New("bridgeport: Ignore takes a port of a namespace the caller deletes; use Take for the process's own")
	}
	s, err := openSpace(ns)
	if err != nil {
		return err
	}
	defer s.close()
	st, err := s.inspect(ifname)
	if err != nil {
		return err
	}
	if st.Clsact {
		return hasClsact(st)
	}
	return s.apply(record{Name: st.Name, Index: st.Index, SetUp: !st.Up, DisableIPv6: st.DisableIPv6})
}

func take(s *space, ifname, who string, self netns.Proc) (*Port, error) {
	unlock, err := lockRecords()
	if err != nil {
		return nil, err
	}
	defer unlock()
	st, err := s.inspect(ifname)
	if err != nil {
		return nil, err
	}
	path := recordPath(s.id, st.Index)
	old, err := readRecord(path)
	switch {
	case err == nil && old.Owner.Alive():
		return nil, heldBy(st, old)
	case err == nil:
		// Its owner died: the port still carries its changes.
		if _, err := restore(old, path); err != nil {
			return nil, err
		}
		if st, err = s.inspect(ifname); err != nil {
			return nil, err
		}
	case !errors.Is(err, os.ErrNotExist):
		return nil, err
	}
	if st.Clsact {
		return nil, hasClsact(st)
	}
	r, err := s.plan(st, who, self)
	if err != nil {
		return nil, err
	}
	if err := writeRecord(path, r); err != nil {
		return nil, err
	}
	if err := s.apply(r); err != nil {
		retry, uerr := s.undo(r)
		if retry {
			return nil, fmt.Errorf("%w; undoing it failed too (record %s kept, the next wanlab bridge or down retries): %w", err, path, uerr)
		}
		os.Remove(path)
		return nil, errors.Join(err, uerr)
	}
	return &Port{s: s, rec: r, path: path, before: st}, nil
}

// heldBy refuses the port st, which the live owner of r holds.
func heldBy(st State, r record) error { return held(st.where(), r.holder()) }

// held refuses the port where, which holder holds.
func held(where, holder string) error {
	return refusef("%s is held by %s: stop that first, or give another interface", where, holder)
}

// plan returns the record of what Take will change on the port st.
func (s *space) plan(st State, who string, self netns.Proc) (record, error) {
	r := record{
		Version:     recordVersion,
		Owner:       self,
		Who:         who,
		Taken:       time.Now().UTC(),
		Netns:       st.Netns,
		NetnsID:     st.NetnsID,
		Name:        st.Name,
		Index:       st.Index,
		SetUp:       !st.Up,
		NoRootQdisc: !st.Up && !slices.ContainsFunc(st.Qdiscs, func(q string) bool { return strings.HasSuffix(q, " parent root") }),
		DisableIPv6: st.DisableIPv6,
	}
	if st.DisableIPv6 != "0" {
		return r, nil
	}
	l, err := s.nl.LinkByIndex(st.Index)
	if err != nil {
		return record{}, fmt.Errorf("bridgeport: %s: %s: %w", s.label(), st.Name, err)
	}
	addrs, err := s.nl.AddrList(l, netlink.FAMILY_V6)
	if err != nil {
		return record{}, fmt.Errorf("bridgeport: %s: addresses of %s: %w", s.label(), st.Name, err)
	}
	for _, a := range addrs {
		p, ok := prefixOf(a.IPNet)
		// Link-local addresses come back with IPv6; addresses without
		// IFA_F_PERMANENT (SLAAC's, temporary ones) come back from the
		// next router advertisement.
		if !ok || p.Addr().IsLinkLocalUnicast() || a.Flags&unix.IFA_F_PERMANENT == 0 {
			continue
		}
		peer, _ := prefixOf(a.Peer)
		r.IPv6Addrs = append(r.IPv6Addrs, addr6{Prefix: p, Peer: peer, Flags: a.Flags})
	}
	routes, err := s.nl.RouteListFiltered(netlink.FAMILY_V6, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE)
	if err != nil {
		return record{}, fmt.Errorf("bridgeport: %s: routes of %s: %w", s.label(), st.Name, err)
	}
	for _, rt := range routes {
		// The kernel makes its own routes (proto kernel) again with the
		// addresses, and router advertisements theirs (proto ra); a
		// route with several next hops is the kernel's to mend.
		if rt.LinkIndex != st.Index || len(rt.MultiPath) > 0 || rt.Protocol == unix.RTPROT_KERNEL || rt.Protocol == unix.RTPROT_RA || rt.Table == unix.RT_TABLE_LOCAL {
			continue
		}
		dst, _ := prefixOf(rt.Dst)
		r.IPv6Routes = append(r.IPv6Routes, route6{
			Dst: dst, Gw: addrOf(rt.Gw), Src: addrOf(rt.Src),
			Table: rt.Table, Priority: rt.Priority, Protocol: int(rt.Protocol),
			Type: rt.Type, Scope: int(rt.Scope), Flags: rt.Flags & unix.RTNH_F_ONLINK,
		})
	}
	return r, nil
}

// apply makes the changes r describes, in the order that keeps the kernel
// quiet on the port: IPv6 off before the port goes up (no link-local
// address, no NDP), the filter in place before it goes up (nothing
// arriving is processed).
func (s *space) apply(r record) error {
	l, err := s.nl.LinkByIndex(r.Index)
	if err != nil {
		return fmt.Errorf("bridgeport: %s: %s: %w", s.label(), r.Name, err)
	}
	if r.DisableIPv6 == "0" {
		if err := s.setDisableIPv6(l.Attrs().Name, "1"); err != nil {
			return err
		}
	}
	if err := s.nl.QdiscAdd(clsact(r.Index)); err != nil {
		return fmt.Errorf("bridgeport: %s: add a clsact qdisc to %s: %w", s.label(), r.Name, err)
	}
	fd, err := loadProgram()
	if err != nil {
		return err
	}
	err = s.nl.FilterAdd(&netlink.BpfFilter{
		FilterAttrs: netlink.FilterAttrs{
			LinkIndex: r.Index,
			Parent:    netlink.HANDLE_MIN_INGRESS,
			Handle:    1,
			Priority:  1,
			Protocol:  unix.ETH_P_ALL,
		},
		Fd:           fd,
		Name:         filterName,
		DirectAction: true,
	})
	// The filter holds the program now; the descriptor is not needed.
	unix.Close(fd)
	if err != nil {
		return fmt.Errorf("bridgeport: %s: add the drop filter to %s (cls_bpf): %w", s.label(), r.Name, err)
	}
	if r.SetUp {
		if err := s.nl.LinkSetUp(l); err != nil {
			return fmt.Errorf("bridgeport: %s: set %s up: %w", s.label(), r.Name, err)
		}
	}
	return nil
}

func clsact(index int) *netlink.Clsact {
	return &netlink.Clsact{QdiscAttrs: netlink.QdiscAttrs{
		LinkIndex: index,
		Handle:    netlink.MakeHandle(0xffff, 0),
		Parent:    netlink.HANDLE_CLSACT,
	}}
}

// undo gives back what apply changed, whether all of it, part of it or
// none was done: the filter and the clsact go (the clsact stays if
// someone else has put filters of their own on it since), the port goes
// down if it was down, IPv6 comes back on and with it the addresses and
// routes that turning it off removed. retry says whether a change is
// still in place (the record must stay for a later try); a failure to
// put back an address or route alone does not, since trying again would
// not mend it.
func (s *space) undo(r record) (retry bool, err error) {
	l, err := s.nl.LinkByIndex(r.Index)
	if err != nil {
		return true, fmt.Errorf("bridgeport: %s: interface %d (%s): %w", s.label(), r.Index, r.Name, err)
	}
	name := l.Attrs().Name
	fail := func(what string, err error) (bool, error) {
		return true, fmt.Errorf("bridgeport: %s: %s %s: %w", s.label(), what, name, err)
	}
	if err := s.removeFilter(l); err != nil {
		return fail("remove the drop filter of", err)
	}
	if r.SetUp {
		if err := s.nl.LinkSetDown(l); err != nil {
			return fail("set down", err)
		}
	}
	if r.NoRootQdisc {
		if err := s.unattach(l); err != nil {
			return fail("take the default qdisc off", err)
		}
	}
	if r.DisableIPv6 != "0" {
		return false, nil
	}
	if err := s.setDisableIPv6(name, "0"); err != nil {
		return true, err
	}
	var errs []error
	for _, a := range r.IPv6Addrs {
		na := &netlink.Addr{IPNet: ipNet(a.Prefix), Flags: a.Flags & settableAddrFlags}
		if a.Peer.IsValid() {
			na.Peer = ipNet(a.Peer)
		}
		if err := s.nl.AddrAdd(l, na); err != nil && !errors.Is(err, unix.EEXIST) {
			errs = append(errs, fmt.Errorf("put back address %s: %w", a.Prefix, err))
		}
	}
	for _, rt := range r.IPv6Routes {
		nr := &netlink.Route{
			LinkIndex: r.Index, Dst: ipNet(rt.Dst), Table: rt.Table, Priority: rt.Priority,
			Protocol: netlink.RouteProtocol(rt.Protocol), Type: rt.Type, Scope: netlink.Scope(rt.Scope), Flags: rt.Flags,
		}
		if rt.Gw.IsValid() {
			nr.Gw = net.IP(rt.Gw.AsSlice())
		}
		if rt.Src.IsValid() {
			nr.Src = net.IP(rt.Src.AsSlice())
		}
		if err := s.nl.RouteAdd(nr); err != nil && !errors.Is(err, unix.EEXIST) {
			errs = append(errs, fmt.Errorf("put back route %s: %w", rt.Dst, err))
		}
	}
	if len(errs) > 0 {
		return false, fmt.Errorf("bridgeport: %s: %s: %w", s.label(), name, errors.Join(errs...))
	}
	return false, nil
}

// settableAddrFlags are the IFA_F_* flags an address can be added with.
const settableAddrFlags = unix.IFA_F_NODAD | unix.IFA_F_HOMEADDRESS | unix.IFA_F_MANAGETEMPADDR | unix.IFA_F_NOPREFIXROUTE | unix.IFA_F_MCAUTOJOIN

// removeFilter removes wanlab's drop filter from l, and the clsact qdisc
// with it unless the clsact holds filters of someone else's.
func (s *space) removeFilter(l netlink.Link) error {
	qs, err := s.nl.QdiscList(l)
	if err != nil {
		return err
	}
	has := false
	for _, q := range qs {
		if _, ok := q.(*netlink.Clsact); ok {
			has = true
		}
	}
	if !has {
		return nil
	}
	var ours []netlink.Filter
	others := 0
	for _, parent := range []uint32{netlink.HANDLE_MIN_INGRESS, netlink.HANDLE_MIN_EGRESS} {
		fs, err := s.nl.FilterList(l, parent)
		if err != nil {
			return err
		}
		for _, f := range fs {
			if b, ok := f.(*netlink.BpfFilter); ok && b.Name == filterName {
				ours = append(ours, f)
			} else {
				others++
			}
		}
	}
	if others == 0 {
		return s.nl.QdiscDel(clsact(l.Attrs().Index))
	}
	for _, f := range ours {
		if err := s.nl.FilterDel(f); err != nil {
			return err
		}
	}
	return nil
}

// unattach takes off the root qdisc that the kernel attached to the port
// l, now down again, when Take set it up for the first time (dev_activate
// attaches the default qdisc to a device whose root is noop). The kernel
// refuses to delete a qdisc of handle 0, which the default one has, but a
// deleted root leaves noop, as before the port was ever up; so the default
// is replaced by a pfifo first, and that deleted. A root qdisc of another
// handle is someone's own, and stays.
func (s *space) unattach(l netlink.Link) error {
	qs, err := s.nl.QdiscList(l)
	if err != nil {
		return err
	}
	for _, q := range qs {
		if a := q.Attrs(); a.Parent != netlink.HANDLE_ROOT || a.Handle != 0 {
			continue
		}
		root := &netlink.GenericQdisc{QdiscAttrs: netlink.QdiscAttrs{LinkIndex: l.Attrs().Index, Parent: netlink.HANDLE_ROOT}, QdiscType: "pfifo"}
		if err := s.nl.QdiscReplace(root); err != nil {
			return err
		}
		return s.nl.QdiscDel(root)
	}
	return nil
}

// Release gives the port back as Take found it (see undo) and removes its
// restore record. Releasing twice does nothing. If the record now belongs
// to another process (someone removed this one's by hand, and another
// bridge took the port), the port is that process's and is left alone.
func (p *Port) Release() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.released {
		return nil
	}
	p.released = true
	defer p.s.close()
	unlock, err := lockRecords()
	if err != nil {
		return err
	}
	defer unlock()
	cur, err := readRecord(p.path)
	switch {
	case err == nil && cur.Owner != p.rec.Owner:
		return fmt.Errorf("bridgeport: %s is now held by %s: left to it", p.rec.where(), cur.holder())
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return err
	}
	retry, err := p.s.undo(p.rec)
	if err != nil && retry {
		return fmt.Errorf("%w (record %s kept: the next wanlab bridge or down retries)", err, p.path)
	}
	if rerr := os.Remove(p.path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		return errors.Join(err, rerr)
	}
	return err
}

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}
