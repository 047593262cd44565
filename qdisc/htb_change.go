package qdisc

import (
	"fmt"
	"slices"

	"wanlab/clock"
)

// Change turns the tree into spec, in place, keeping the packets, as the
// tc commands that make the difference would (sch_htb.c's
// htb_change_class, htb_delete, htb_graft):
//
//   - a class in both keeps its tokens and takes its new rates, bursts
//     and, while a leaf, its quantum and prio (tc class change); its leaf
//     chain changes as tc qdisc commands would change it (see subtree);
//   - a class only in spec is added with full buckets, after the classes
//     before it in spec; a leaf that gains its first child loses its leaf
//     qdisc and that qdisc's packets (htb_change_class purges it);
//   - a class only in the tree is deleted with its leaf's packets (tc
//     class del); a parent that loses its last child becomes a leaf
//     again, with the default pfifo and full buckets
//     (htb_parent_to_leaf);
//   - the filters become spec's.
//
// Packets dropped so are reported with ReasonFlushed. What the kernel
// refuses, Change refuses, changing nothing: another handle, r2q,
// default or direct_qlen (the kernel's htb has no change operation: tc
// qdisc change says "Change operation not supported"), a class moved to
// another parent (tc class change keeps the parent), and a deleted class
// that a filter kept in spec still sends packets to (tc class del says
// "HTB class in use").
func (q *HTB) Change(now clock.Time, spec Spec) error {
	c, err := specAs[HTBConfig](q, spec)
	if err != nil {
		return err
	}
	t, err := q.checkDiff(&c)
	if err != nil {
		return err
	}
	// Deletions, children before their parents.
	for i := len(q.classes) - 1; i >= 0; i-- {
		if cl := q.classes[i]; t.keep[cl.id] < 0 {
			q.deleteClass(now, cl)
		}
	}
	// Changes and additions, in spec's order, so that parents come first.
	for i := range c.Classes {
		nc := &c.Classes[i]
		cl := q.byID[nc.ID]
		if cl == nil {
			var parent *htbClass
			if p := t.parent[i]; p >= 0 {
				parent = q.byID[c.Classes[p].ID]
			}
			cl = q.addClass(now, nc, parent)
		} else {
			q.setClass(cl, nc)
		}
		if cl.level == 0 {
			cl.leaf.change(now, nc.Leaf, q.env, q.u)
			tellParentPeeks(cl.leaf.Qdisc, true)
		}
	}
	q.setFilters(c.Filters)
	q.sizeLists()
	return nil
}

// htbDiff is a checked change: the new tree's shape, and for each old
// class (by id) its index in spec, -1 when it goes.
type htbDiff struct {
	*htbTree
	keep map[ClassID]int
}

// checkChange reports whether Change(spec) would succeed.
func (q *HTB) checkChange(spec Spec) error {
	c, err := specAs[HTBConfig](q, spec)
	if err != nil {
		return err
	}
	_, err = q.checkDiff(&c)
	return err
}

func (q *HTB) checkDiff(c *HTBConfig) (*htbDiff, error) {
	t, err := checkHTB(c)
	if err != nil {
		return nil, err
	}
	dq := c.DirectQLen
	if dq == 0 {
		dq = q.env.QueueLen()
	}
	if c.handle() != q.handle || c.r2q() != q.r2q || c.Default != q.cfg.Default || dq != q.directQLen {
		return nil, fmt.Errorf("htb: the qdisc's handle, default, r2q and direct_qlen cannot change in place (the kernel's htb has no change operation: tc qdisc change says \"Change operation not supported by specified qdisc\"); delete the qdisc and add it again, losing its packets, or change only its classes and filters")
	}
	d := &htbDiff{htbTree: t, keep: make(map[ClassID]int, len(q.classes))}
	for _, cl := range q.classes {
		i, ok := t.index[cl.id]
		if !ok {
			d.keep[cl.id] = -1
			if f := q.filterTo(cl.id, c.Filters); f != nil {
				return nil, fmt.Errorf("htb: class %v cannot go while the filter of prio %d on %v sends packets to it (tc class del says \"HTB class in use\"); delete the filter first", cl.id, f.Prio, q.parentName(f.Parent))
			}
			continue
		}
		d.keep[cl.id] = i
		var was, now ClassID
		if cl.parent != nil {
			was = cl.parent.id
		}
		if p := t.parent[i]; p >= 0 {
			now = c.Classes[p].ID
		}
		if was != now {
			return nil, fmt.Errorf("htb: class %v cannot move from %s to %s in place (tc class change keeps a class's parent); delete the class and add it under %s", cl.id, q.parentName(was), q.parentName(now), q.parentName(now))
		}
	}
	// Each leaf's new chain, checked against the leaf it will change:
	// its own, or the default pfifo of a class that is new or becomes a
	// leaf again.
	for i := range c.Classes {
		nc := &c.Classes[i]
		if t.children[i] > 0 {
			continue
		}
		var leaf subtree
		if cl := q.byID[nc.ID]; cl != nil && cl.level == 0 {
			leaf = cl.leaf
		} else {
			leaf.dflt = true
		}
		if err := leaf.check(nc.Leaf, q.env); err != nil {
			return nil, fmt.Errorf("htb: class %v: %w", nc.ID, err)
		}
	}
	return d, nil
}

// filterTo returns a filter of q's that fs keeps and that sends packets
// to id, or nil.
func (q *HTB) filterTo(id ClassID, fs []Filter) *Filter {
	for i := range q.cfg.Filters {
		f := &q.cfg.Filters[i]
		if f.ClassID != id {
			continue
		}
		for j := range fs {
			if sameFilter(f, &fs[j]) {
				return f
			}
		}
	}
	return nil
}

// parentName names a parent for messages: a class, or the qdisc.
func (q *HTB) parentName(id ClassID) string {
	if id == 0 || id == q.handle {
		return "the qdisc (" + q.handle.String() + ")"
	}
	return id.String()
}

// deleteClass removes cl, which has no children, at now (htb_delete).
func (q *HTB) deleteClass(now clock.Time, cl *htbClass) {
	q.purgeLeaf(now, cl)
	delete(q.byID, cl.id)
	q.classes = slices.DeleteFunc(q.classes, func(c *htbClass) bool { return c == cl })
	p := cl.parent
	if p == nil {
		return
	}
	p.children--
	if p.children > 0 {
		return
	}
	// htb_parent_to_leaf: the parent is a leaf again.
	if p.mode != htbCanSend {
		q.removeWait(p)
	}
	p.level = 0
	p.prioActivity = 0
	for i := range p.clprio {
		p.clprio[i] = htbPrio{list: p.clprio[i].list[:0]}
	}
	leaf, err := newSubtree(nil, q.env, subtreeSeed(q.seed, p.id), q.u)
	if err != nil {
		panic(fmt.Sprintf("qdisc: htb's default leaf does not build: %v", err))
	}
	p.leaf = leaf
	tellParentPeeks(leaf.Qdisc, true)
	p.tokens, p.ctokens, p.tc, p.mode = p.buffer, p.cbuffer, now, htbCanSend
}

// purgeLeaf takes leaf cl out of the schedule and drops its packets, as
// htb_delete does before it frees a class.
func (q *HTB) purgeLeaf(now clock.Time, cl *htbClass) {
	cl.leaf.Flush(now)
	q.deactivate(cl)
	if cl.mode != htbCanSend {
		q.removeWait(cl)
	}
}

// addClass makes the class c under parent at now (htb_change_class for a
// new class): a parent that was a leaf loses its leaf qdisc, with its
// packets, and becomes an inner class.
func (q *HTB) addClass(now clock.Time, c *HTBClass, parent *htbClass) *htbClass {
	if parent != nil && parent.level == 0 {
		parent.leaf.Flush(now)
		q.deactivate(parent)
		if parent.mode != htbCanSend {
			q.removeWait(parent)
			parent.mode = htbCanSend
		}
		parent.level = htbMaxDepth - 1
		if parent.parent != nil {
			parent.level = parent.parent.level - 1
		}
		parent.leaf = subtree{}
		parent.deficit = [htbMaxDepth]int{}
	}
	// The leaf starts as the kernel's default; Change then gives it its
	// chain, as tc qdisc add would after tc class add.
	d := *c
	d.Leaf = nil
	cl, err := q.newClass(&d, parent, false, now)
	if err != nil {
		panic(fmt.Sprintf("qdisc: htb's default leaf does not build: %v", err))
	}
	q.classes = append(q.classes, cl)
	q.byID[cl.id] = cl
	return cl
}
