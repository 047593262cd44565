package tcspec

import (
	"fmt"
	"slices"

	"wanlab/qdisc"
)

// This file is one device's tree of qdiscs as tc sees it: each qdisc with
// its handle, where it hangs, the classes of htb and the filters of htb
// and prio, and what tc commands do to it, as the kernel's sch_api.c,
// cls_api.c and sch_htb.c do on this kernel (Linux 6.18), checked against
// it: what the kernel refuses of the state (a qdisc that exists, a class
// in use) is refused with its words and the fix.

// tnode is one qdisc of a tree.
type tnode struct {
	handle uint16 // its major
	// spec is its own configuration: for htb its options, classes (each
	// Leaf nil) and filters; for prio its options and filters (Leaves
	// nil).
	spec qdisc.Spec
	// child is the qdisc on the one class of a netem or tbf (MAJ:1), nil
	// for none (tbf's own bfifo).
	child *tnode
	// leaves are the qdiscs on the classes of htb or prio, by the class's
	// minor; a class without one has the kernel's default pfifo.
	leaves map[uint16]*tnode
}

// tree is one device's tree.
type tree struct {
	root *tnode
	auto uint16 // the last automatic handle given
}

// withClasses reports whether a kind hangs its children on classes of
// its own (htb's, prio's bands).
func withClasses(s qdisc.Spec) bool {
	switch s.(type) {
	case qdisc.HTBConfig, qdisc.PrioConfig:
		return true
	}
	return false
}

// classfulChain reports whether a kind takes one child in the chain.
func classfulChain(s qdisc.Spec) bool {
	switch s.(type) {
	case qdisc.NetemConfig, qdisc.TBFConfig:
		return true
	}
	return false
}

// specHandle is the handle of an htb or prio as its configuration has it
// (0 for the kernel's automatic one).
func specHandle(s qdisc.Spec) uint16 {
	switch c := s.(type) {
	case qdisc.HTBConfig:
		return c.Handle
	case qdisc.PrioConfig:
		return c.Handle
	}
	return 0
}

// withHandle returns s, an htb or prio, with handle h.
func withHandle(s qdisc.Spec, h uint16) qdisc.Spec {
	switch c := s.(type) {
	case qdisc.HTBConfig:
		c.Handle = h
		return c
	case qdisc.PrioConfig:
		c.Handle = h
		return c
	}
	return s
}

// treeOf lays a chain out as a tree with handles: an htb's or prio's its
// own (the kernel's first automatic one, 8001:, for none), the others'
// the lowest free major, except that the qdisc on a class MAJ:MIN takes
// MIN: when it is free (a leaf of class 1:10 is 10:), as scripts name
// them. The root of a chain of netem, tbf and fifos is 1:, its child 2:,
// and so on.
func treeOf(chain []qdisc.Spec) *tree {
	t := &tree{auto: 0x8000}
	used := map[uint16]bool{}
	var reserve func(specs []qdisc.Spec)
	reserve = func(specs []qdisc.Spec) {
		for _, s := range specs {
			switch c := s.(type) {
			case qdisc.HTBConfig:
				used[orAuto(c.Handle)] = true
				for _, cl := range c.Classes {
					reserve(cl.Leaf)
				}
			case qdisc.PrioConfig:
				used[orAuto(c.Handle)] = true
				for _, l := range c.Leaves {
					reserve(l)
				}
			}
		}
	}
	reserve(chain)
	free := func(prefer uint16) uint16 {
		if prefer != 0 && !used[prefer] {
			used[prefer] = true
			return prefer
		}
		for h := uint16(1); ; h++ {
			if !used[h] {
				used[h] = true
				return h
			}
		}
	}
	var build func(specs []qdisc.Spec, prefer uint16) *tnode
	build = func(specs []qdisc.Spec, prefer uint16) *tnode {
		if len(specs) == 0 {
			return nil
		}
		n := &tnode{spec: specs[0]}
		switch c := specs[0].(type) {
		case qdisc.HTBConfig:
			n.handle = orAuto(c.Handle)
			n.leaves = map[uint16]*tnode{}
			classes := slices.Clone(c.Classes)
			for i := range classes {
				if l := build(classes[i].Leaf, classes[i].ID.Minor()); l != nil {
					n.leaves[classes[i].ID.Minor()] = l
				}
				classes[i].Leaf = nil
			}
			c.Classes = classes
			n.spec = c
		case qdisc.PrioConfig:
			n.handle = orAuto(c.Handle)
			n.leaves = map[uint16]*tnode{}
			for b, l := range c.Leaves {
				if l := build(l, uint16(b+1)); l != nil {
					n.leaves[uint16(b+1)] = l
				}
			}
			c.Leaves = nil
			n.spec = c
		default:
			n.handle = free(prefer)
		}
		n.child = build(specs[1:], 0)
		return n
	}
	t.root = build(chain, 0)
	return t
}

// orAuto is h, or the kernel's first automatic handle for none.
func orAuto(h uint16) uint16 {
	if h == 0 {
		return 0x8001
	}
	return h
}

// chain returns the tree as a chain, the qdiscs under classes in their
// classes' Leaf and prio's Leaves.
func (t *tree) chain() []qdisc.Spec { return t.root.chain() }

func (n *tnode) chain() []qdisc.Spec {
	var out []qdisc.Spec
	for ; n != nil; n = n.child {
		switch c := n.spec.(type) {
		case qdisc.HTBConfig:
			c.Classes = slices.Clone(c.Classes)
			for i := range c.Classes {
				c.Classes[i].Leaf = n.leaves[c.Classes[i].ID.Minor()].chain()
			}
			c.Filters = slices.Clone(c.Filters)
			out = append(out, c)
		case qdisc.PrioConfig:
			c.Leaves = nil
			if keys := sortedKeys(n.leaves); len(keys) > 0 {
				c.Leaves = make([][]qdisc.Spec, keys[len(keys)-1])
				for _, b := range keys {
					c.Leaves[b-1] = n.leaves[b].chain()
				}
			}
			c.Filters = slices.Clone(c.Filters)
			out = append(out, c)
		default:
			out = append(out, c)
		}
	}
	return out
}

// find returns the qdisc of handle major h, and the qdisc and class it
// hangs on (nil, 0 for the root).
func (t *tree) find(h uint16) (n, parent *tnode, minor uint16) {
	var walk func(n, p *tnode, m uint16) bool
	walk = func(x, p *tnode, m uint16) bool {
		if x == nil {
			return false
		}
		if x.handle == h {
			n, parent, minor = x, p, m
			return true
		}
		if walk(x.child, x, 1) {
			return true
		}
		for _, k := range sortedKeys(x.leaves) {
			if walk(x.leaves[k], x, k) {
				return true
			}
		}
		return false
	}
	walk(t.root, nil, 0)
	return n, parent, minor
}

func sortedKeys(m map[uint16]*tnode) []uint16 {
	keys := make([]uint16, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// handles returns every handle in use.
func (t *tree) handles() map[uint16]bool {
	used := map[uint16]bool{}
	var walk func(n *tnode)
	walk = func(n *tnode) {
		if n == nil {
			return
		}
		used[n.handle] = true
		walk(n.child)
		for _, l := range n.leaves {
			walk(l)
		}
	}
	walk(t.root)
	return used
}

// autoHandle is qdisc_alloc_handle: the next free major from 8001: on.
func (t *tree) autoHandle() uint16 {
	used := t.handles()
	for {
		t.auto++
		if t.auto == 0 || t.auto == 0xffff {
			t.auto = 0x8001
		}
		if !used[t.auto] {
			return t.auto
		}
	}
}

// stateError is a command the kernel would refuse on the tree as it is:
// a script that silences the command goes on past it.
type stateError struct{ msg string }

func (e *stateError) Error() string { return e.msg }

func refuse(format string, args ...any) error {
	return &stateError{fmt.Sprintf(format, args...)}
}

// slot is a place a qdisc hangs: the root, or a class of a qdisc.
type slot struct {
	parent *tnode // nil: the root
	minor  uint16
}

// at returns the qdisc at s (nil for none or a default one).
func (t *tree) at(s slot) *tnode {
	switch {
	case s.parent == nil:
		return t.root
	case withClasses(s.parent.spec):
		return s.parent.leaves[s.minor]
	}
	return s.parent.child
}

// set hangs n at s (nil: the default).
func (t *tree) set(s slot, n *tnode) {
	switch {
	case s.parent == nil:
		t.root = n
	case withClasses(s.parent.spec):
		if n == nil {
			delete(s.parent.leaves, s.minor)
		} else {
			s.parent.leaves[s.minor] = n
		}
	default:
		s.parent.child = n
	}
}

// slotOf resolves "root" or "parent MAJ:MIN" as qdisc_lookup and
// qdisc_leaf do, checking that the class exists (for a command that
// hangs a qdisc there).
func (t *tree) slotOf(c *tcCmd) (slot, error) {
	if c.root {
		return slot{}, nil
	}
	major, minor := c.parent.Major(), c.parent.Minor()
	p, _, _ := t.find(major)
	if p == nil {
		return slot{}, refuse("there is no qdisc %x: to hang it on (the kernel says \"Failed to find specified qdisc\"): add the parent first, or give root", major)
	}
	switch s := p.spec.(type) {
	case qdisc.HTBConfig:
		i := slices.IndexFunc(s.Classes, func(cl qdisc.HTBClass) bool { return cl.ID.Minor() == minor })
		if i < 0 {
			return slot{}, refuse("htb %x: has no class %v (the kernel says \"Specified class not found\"): add the class first", major, c.parent)
		}
		if hasChildren(s, s.Classes[i].ID) {
			return slot{}, refuse("class %v has child classes, so no qdisc of its own (the kernel says \"Invalid argument\"): hang it on one of its leaf classes", c.parent)
		}
	case qdisc.PrioConfig:
		bands := s.Bands
		if bands == 0 {
			bands = 3
		}
		if minor < 1 || int(minor) > bands {
			return slot{}, refuse("prio %x: has bands %x:1 to %x:%x; %v is none of them", major, major, major, bands, c.parent)
		}
	case qdisc.NetemConfig, qdisc.TBFConfig:
		// Their one class takes any minor (netem_find, tbf_find).
	default:
		return slot{}, refuse("%s %x: is not classful: a qdisc can hang on htb's classes, prio's bands, or netem's or tbf's class (MAJ:1)", p.spec.Kind(), major)
	}
	return slot{parent: p, minor: minor}, nil
}

// hasChildren reports whether class id of c has child classes.
func hasChildren(c qdisc.HTBConfig, id qdisc.ClassID) bool {
	return slices.ContainsFunc(c.Classes, func(cl qdisc.HTBClass) bool { return cl.Parent == id && cl.ID != id })
}

// apply does c to the tree, as the kernel would; a *stateError is what
// the kernel would refuse.
func (t *tree) apply(c *tcCmd) error {
	switch c.object {
	case "qdisc":
		if c.verb == "delete" {
			return t.delQdisc(c)
		}
		return t.modifyQdisc(c)
	case "class":
		if c.verb == "delete" {
			return t.delClass(c)
		}
		return t.modifyClass(c)
	}
	if c.verb == "delete" {
		return t.delFilter(c)
	}
	return t.addFilter(c)
}

// target resolves where a qdisc command acts: root or parent MAJ:MIN
// (and the qdisc there, nil for none or a default), or, when byHandle,
// the qdisc of c's handle wherever it is (notFound says what the kernel
// answers when there is none).
func (t *tree) target(c *tcCmd, byHandle bool, notFound string) (slot, *tnode, error) {
	switch {
	case c.root || c.hasParent:
		s, err := t.slotOf(c)
		if err != nil {
			return s, nil, err
		}
		return s, t.at(s), nil
	case c.handle != 0 && byHandle:
		cur, p, m := t.find(c.handle)
		if cur == nil {
			return slot{}, nil, refuse("there is no qdisc %x: (the kernel says %q)", c.handle, notFound)
		}
		return slot{parent: p, minor: m}, cur, nil
	}
	return slot{}, nil, refuse("where? give root, or parent MAJ:MIN (the class it hangs on)")
}

// modifyQdisc is tc qdisc add, replace or change (tc_modify_qdisc).
func (t *tree) modifyQdisc(c *tcCmd) error {
	// tc qdisc change dev DEV handle H: ... changes the qdisc of that
	// handle.
	s, cur, err := t.target(c, c.verb == "change", "Specified qdisc not found")
	if err != nil {
		return err
	}
	replace := c.verb == "replace"
	if c.handle != 0 && (cur == nil || cur.handle != c.handle) {
		if cur != nil && !replace {
			return refuse("%s %x: is already there (the kernel says \"NLM_F_REPLACE needed to override\"): use tc qdisc replace, or delete it first", cur.spec.Kind(), cur.handle)
		}
		if other, _, _ := t.find(c.handle); other != nil {
			return refuse("handle %x: is another qdisc's (%s): wanlab does not move a qdisc; give a handle of its own", c.handle, other.spec.Kind())
		}
		return t.create(c, s, cur)
	}
	if cur == nil {
		if c.verb == "change" {
			return refuse("there is no qdisc there to change (the kernel says \"Qdisc not found. To create specify NLM_F_CREATE flag\"): use tc qdisc add")
		}
		return t.create(c, s, cur)
	}
	if c.verb == "add" {
		return refuse("%s %x: is already there (the kernel says \"Exclusivity flag on, cannot modify\"): use tc qdisc replace or change, or delete it first", cur.spec.Kind(), cur.handle)
	}
	if cur.spec.Kind() != c.kind {
		if c.handle != 0 {
			return refuse("%s %x: is a %s, not a %s (the kernel says \"Invalid qdisc name\"): use tc qdisc replace without the handle to put a %s there", cur.spec.Kind(), cur.handle, cur.spec.Kind(), c.kind, c.kind)
		}
		// A replace, or on this kernel a change, of another kind
		// grafts a new qdisc.
		return t.create(c, s, cur)
	}
	return t.changeQdisc(c, cur)
}

// create makes c's qdisc and hangs it at s in place of cur (whose
// subtree goes with it).
func (t *tree) create(c *tcCmd, s slot, cur *tnode) error {
	if c.verb == "change" && cur == nil {
		return refuse("there is no qdisc there to change (the kernel says \"Qdisc not found. To create specify NLM_F_CREATE flag\"): use tc qdisc add")
	}
	h := c.handle
	if h == 0 {
		h = t.autoHandle()
	}
	n := &tnode{handle: h, spec: c.spec}
	if withClasses(c.spec) {
		n.spec = withHandle(c.spec, specHandleFor(c, h))
		n.leaves = map[uint16]*tnode{}
	}
	t.set(s, n)
	return nil
}

// specHandleFor is the handle an htb or prio's configuration keeps: the
// one the line gave, or the automatic one.
func specHandleFor(c *tcCmd, h uint16) uint16 {
	if c.handle == 0 && h == 0x8001 {
		return 0
	}
	return h
}

// changeQdisc changes cur's options in place (qdisc_change).
func (t *tree) changeQdisc(c *tcCmd, cur *tnode) error {
	switch old := cur.spec.(type) {
	case qdisc.HTBConfig:
		return refuse("htb has no change of its own options in the kernel (\"Change operation not supported by specified qdisc\"): change its classes with tc class change, or delete the qdisc and add it again")
	case qdisc.PrioConfig:
		nc := c.spec.(qdisc.PrioConfig)
		nc.Handle, nc.Filters = old.Handle, old.Filters
		bands := nc.Bands
		if bands == 0 {
			bands = 3
		}
		for m := range cur.leaves {
			if int(m) > bands {
				delete(cur.leaves, m)
			}
		}
		cur.spec = nc
	default:
		cur.spec = c.spec
	}
	return nil
}

// delQdisc is tc qdisc del (tc_get_qdisc, then qdisc_graft of nothing).
func (t *tree) delQdisc(c *tcCmd) error {
	s, cur, err := t.target(c, true, "Cannot find specified qdisc on specified device")
	switch {
	case err != nil:
		return err
	case cur == nil && c.root:
		return refuse("the device has no qdisc of its own to delete (the kernel says \"Cannot delete qdisc with handle of zero\"): drop the line, or silence it with 2>/dev/null as scripts that clear a device first do")
	case cur == nil:
		return refuse("%v has only the kernel's default qdisc, which cannot be deleted (\"Cannot delete qdisc with handle of zero\"): drop the line", c.parent)
	case (c.root || c.hasParent) && c.handle != 0 && cur.handle != c.handle:
		return refuse("the qdisc there is %x:, not %x: (the kernel says \"Invalid handle\")", cur.handle, c.handle)
	}
	if c.kind != "" && cur.spec.Kind() != c.kind {
		return refuse("the qdisc there is a %s, not a %s (the kernel says \"Invalid qdisc name\")", cur.spec.Kind(), c.kind)
	}
	if s.parent != nil {
		if _, ok := s.parent.spec.(qdisc.TBFConfig); ok {
			return refuse("deleting a tbf's child leaves the tbf with the kernel's noop qdisc, which drops every packet, and wanlab does not emulate that: replace the child with tc qdisc replace, or delete the tbf")
		}
	}
	t.set(s, nil)
	return nil
}

// htbOf returns the htb of the class or parent c names, and its node.
func (t *tree) htbOf(c *tcCmd, id qdisc.ClassID) (*tnode, qdisc.HTBConfig, error) {
	n, _, _ := t.find(id.Major())
	if n == nil {
		return nil, qdisc.HTBConfig{}, refuse("there is no qdisc %x: (the kernel says \"No such file or directory\"): add the htb qdisc first", id.Major())
	}
	h, ok := n.spec.(qdisc.HTBConfig)
	if !ok {
		if _, prio := n.spec.(qdisc.PrioConfig); prio {
			return nil, h, refuse("prio %x:'s classes are its bands, fixed by its \"bands\": change them with tc qdisc change ... prio bands N", id.Major())
		}
		return nil, h, refuse("%s %x: has no classes to add or change (only htb's take tc class commands)", n.spec.Kind(), id.Major())
	}
	return n, h, nil
}

// modifyClass is tc class add, change or replace (tc_ctl_tclass and
// htb_change_class).
func (t *tree) modifyClass(c *tcCmd) error {
	id := c.classid
	if c.hasParent && id != 0 && c.parent.Major() != id.Major() {
		return refuse("parent %v and classid %v are of different qdiscs (the kernel says \"Invalid argument\"): a class's parent is its own qdisc or one of its classes", c.parent, id)
	}
	if id == 0 {
		return refuse("no classid (the kernel says \"Invalid argument\"): give classid MAJ:MIN")
	}
	n, h, err := t.htbOf(c, id)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(h.Classes, func(cl qdisc.HTBClass) bool { return cl.ID == id })
	nc := c.class
	nc.ID = id
	h.Classes = slices.Clone(h.Classes)
	if i >= 0 {
		if c.verb == "add" {
			return refuse("class %v exists (the kernel says \"File exists\"): change it with tc class change", id)
		}
		// htb_change_class keeps the parent a class was made with.
		nc.Parent = h.Classes[i].Parent
		h.Classes[i] = nc
		n.spec = h
		return nil
	}
	if c.verb == "change" {
		return refuse("there is no class %v to change (the kernel says \"No such file or directory\"): add it with tc class add", id)
	}
	if id.Minor() == 0 {
		return refuse("classid %v names the qdisc itself (the kernel says \"Invalid argument\"): give the class a minor, e.g. %x:1", id, id.Major())
	}
	switch {
	case c.root || !c.hasParent:
		nc.Parent = qdisc.MakeClassID(id.Major(), 0)
	default:
		nc.Parent = c.parent
	}
	// A leaf that gains its first child loses its qdisc
	// (htb_change_class purges it).
	if nc.Parent.Minor() != 0 && !hasChildren(h, nc.Parent) {
		delete(n.leaves, nc.Parent.Minor())
	}
	h.Classes = append(h.Classes, nc)
	n.spec = h
	return nil
}

// delClass is tc class del (htb_delete).
func (t *tree) delClass(c *tcCmd) error {
	id := c.classid
	n, h, err := t.htbOf(c, id)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(h.Classes, func(cl qdisc.HTBClass) bool { return cl.ID == id })
	if i < 0 {
		return refuse("there is no class %v to delete (the kernel says \"No such file or directory\")", id)
	}
	if hasChildren(h, id) {
		return refuse("class %v has child classes (the kernel says \"HTB class in use\"): delete them first", id)
	}
	for _, f := range h.Filters {
		if f.ClassID == id && f.Parent != id {
			return refuse("a filter (prio %d on %v) still sends packets to class %v (the kernel says \"HTB class in use\"): delete it first, with tc filter del dev %s parent %v prio %d", f.Prio, attachName(f.Parent, h.Handle), id, c.dev, attachName(f.Parent, h.Handle), f.Prio)
		}
	}
	h.Classes = slices.Delete(slices.Clone(h.Classes), i, i+1)
	// The class's own filters go with it.
	h.Filters = slices.DeleteFunc(slices.Clone(h.Filters), func(f qdisc.Filter) bool { return f.Parent == id })
	delete(n.leaves, id.Minor())
	n.spec = h
	return nil
}

// attachName names a filter's attachment point, as tc writes it.
func attachName(p qdisc.ClassID, handle uint16) qdisc.ClassID {
	if p == 0 {
		return qdisc.MakeClassID(orAuto(handle), 0)
	}
	return p
}

// filtersOf returns the qdisc a filter command attaches to, its
// filters, and the attachment point (MAJ: or a class).
func (t *tree) filtersOf(c *tcCmd) (*tnode, []qdisc.Filter, qdisc.ClassID, error) {
	var n *tnode
	at := c.parent
	switch {
	case c.root:
		return nil, nil, 0, refuse("a filter on \"root\" (the kernel says \"Parent Qdisc doesn't exists\" here): give parent MAJ:, the root qdisc's handle")
	case !c.hasParent:
		if n = t.root; n == nil {
			return nil, nil, 0, refuse("the device has no qdisc to attach the filter to (the kernel says \"Parent Qdisc doesn't exists\"): add the qdisc first")
		}
		at = qdisc.MakeClassID(n.handle, 0)
	default:
		if n, _, _ = t.find(at.Major()); n == nil {
			return nil, nil, 0, refuse("there is no qdisc %x: to attach the filter to (the kernel says \"Parent Qdisc doesn't exists\"): add it first", at.Major())
		}
	}
	switch s := n.spec.(type) {
	case qdisc.HTBConfig:
		if at.Minor() != 0 && !slices.ContainsFunc(s.Classes, func(cl qdisc.HTBClass) bool { return cl.ID == at }) {
			return nil, nil, 0, refuse("htb %x: has no class %v (the kernel says \"Specified class doesn't exist\"): attach the filter to %x: or to one of its classes", at.Major(), at, at.Major())
		}
		return n, s.Filters, at, nil
	case qdisc.PrioConfig:
		if at.Minor() != 0 {
			return nil, nil, 0, refuse("prio's bands take no filters of their own: attach the filter to %x:", at.Major())
		}
		return n, s.Filters, at, nil
	}
	return nil, nil, 0, refuse("%s %x: takes no filters (the kernel says \"Class doesn't support blocks\"): attach filters to an htb or a prio", n.spec.Kind(), at.Major())
}

// setFilters stores fs as n's filters.
func setFilters(n *tnode, fs []qdisc.Filter) {
	switch s := n.spec.(type) {
	case qdisc.HTBConfig:
		s.Filters = fs
		n.spec = s
	case qdisc.PrioConfig:
		s.Filters = fs
		n.spec = s
	}
}

// sameAttach reports whether filter f is attached at at of a qdisc whose
// handle is h (a filter's Parent 0 is the qdisc's own).
func sameAttach(f qdisc.Filter, at qdisc.ClassID, h uint16) bool {
	return attachName(f.Parent, h) == attachName(at, h)
}

// addFilter is tc filter add or replace (tc_new_tfilter): a new u32
// filter at its prio, or at the prio the kernel allocates (one below the
// lowest of 0x8000 and above there, 0xc000 for the first), after the
// filters of its prio.
func (t *tree) addFilter(c *tcCmd) error {
	n, fs, at, err := t.filtersOf(c)
	if err != nil {
		return err
	}
	h := specHandle(n.spec)
	f := c.filter
	f.Parent = at
	f.Protocol = qdisc.ProtocolAll
	if c.hasProto {
		f.Protocol = c.proto
	}
	f.Prio = c.prio
	if f.Prio == 0 {
		f.Prio = 0xc000
		lowest := -1
		for _, g := range fs {
			if sameAttach(g, at, h) && g.Prio >= 0x8000 && (lowest < 0 || int(g.Prio) < lowest) {
				lowest = int(g.Prio)
			}
		}
		if lowest > 0 {
			f.Prio = uint16(lowest - 1)
		}
	}
	for _, g := range fs {
		if sameAttach(g, at, h) && g.Prio == f.Prio && g.Protocol != f.Protocol {
			return refuse("prio %d on %v holds protocol %v filters (the kernel says \"Protocol mismatch for filter with specified priority\"): give this one another prio", f.Prio, at, g.Protocol)
		}
	}
	setFilters(n, append(slices.Clone(fs), f))
	return nil
}

// delFilter is tc filter del: the filters of one prio (and protocol, if
// given), or all the filters of the attachment point.
func (t *tree) delFilter(c *tcCmd) error {
	n, fs, at, err := t.filtersOf(c)
	if err != nil {
		return err
	}
	h := specHandle(n.spec)
	found := false
	keep := slices.DeleteFunc(slices.Clone(fs), func(f qdisc.Filter) bool {
		if !sameAttach(f, at, h) || c.prio != 0 && f.Prio != c.prio {
			return false
		}
		found = true
		return true
	})
	if c.prio != 0 {
		if !found {
			return refuse("there is no filter of prio %d on %v (the kernel says \"Filter with specified priority/protocol not found\")", c.prio, at)
		}
		for _, f := range fs {
			if sameAttach(f, at, h) && f.Prio == c.prio && c.hasProto && f.Protocol != c.proto {
				return refuse("prio %d on %v holds protocol %v filters, not %v (the kernel says \"Protocol mismatch for filter with specified priority\")", c.prio, at, f.Protocol, c.proto)
			}
		}
	}
	setFilters(n, keep)
	return nil
}
