package tcspec

import (
	"slices"

	"wanlab/qdisc"
)

// Placed is one qdisc of a device's tree as tc lists it: the instance,
// its handle and the class it hangs on.
type Placed struct {
	// Qdisc is the discipline.
	Qdisc qdisc.Qdisc
	// Handle is its handle, MAJ:0, as FormatScript gives it.
	Handle qdisc.ClassID
	// Parent is the class it hangs on; Root says it is the device's root.
	Parent qdisc.ClassID
	Root   bool
	// Hidden says it is a default tc does not list (tbf's own bfifo, the
	// kernel's pfifo on a class without a qdisc of its own), whose
	// counts the kernel adds to Owner's, the qdisc it serves.
	Hidden bool
	Owner  qdisc.Qdisc
}

// PlacedClass is one class of a device's tree as `tc -s class show`
// lists it.
type PlacedClass struct {
	// Kind is the kind of the qdisc the class belongs to: "htb", "prio"
	// (a band), "netem" or "tbf" (the class MAJ:1 their child hangs on).
	Kind string
	// ID is the class; Parent is its parent class, or the qdisc's handle
	// for a class at the top (Root says so for htb, whose top classes tc
	// shows as "root").
	ID, Parent qdisc.ClassID
	Root       bool
	// Leaf is the handle of the qdisc on the class, 0 for none or the
	// kernel's default (which tc does not show).
	Leaf qdisc.ClassID
	// HTB is an htb class's configuration and counters (nil for other
	// kinds).
	HTB *qdisc.HTBClassInfo
	// Band is a prio band's qdisc, whose counters tc shows for the band
	// (nil for other kinds).
	Band qdisc.Qdisc
}

// Layout walks the tree root heads (nil for none), as a router runs it,
// and returns its qdiscs in the order tc's lines make them (FormatScript)
// with the handles those lines give, then the defaults tc does not list
// (tbf's bfifo, the default pfifo of a class; Hidden), and its classes.
func Layout(root qdisc.Qdisc) ([]Placed, []PlacedClass) {
	qs, cs := layout(root)
	var hidden []Placed
	for _, p := range qs {
		switch x := p.Qdisc.(type) {
		case *qdisc.TBF, *qdisc.RED:
			// Their default bfifo, which the kernel makes invisible.
			if c := x.Child(); c != nil && !slices.ContainsFunc(qs, func(o Placed) bool { return o.Qdisc == c }) {
				hidden = append(hidden, Placed{Qdisc: c, Hidden: true, Owner: x})
			}
		case *qdisc.HTB:
			for _, ci := range x.Classes() {
				if ci.DefaultLeaf {
					hidden = append(hidden, Placed{Qdisc: ci.Leaf, Hidden: true, Owner: x})
				}
			}
		case *qdisc.Prio:
			for _, b := range x.Bands() {
				if b.DefaultLeaf {
					hidden = append(hidden, Placed{Qdisc: b.Leaf, Hidden: true, Owner: x})
				}
			}
		}
	}
	return append(qs, hidden...), cs
}

func layout(root qdisc.Qdisc) ([]Placed, []PlacedClass) {
	var chain []qdisc.Spec
	for _, q := range qdisc.Positions(root) {
		chain = append(chain, q.Config())
	}
	t := treeOf(chain)
	var qs []Placed
	var cs []PlacedClass
	var walk func(q qdisc.Qdisc, n *tnode, parent qdisc.ClassID, isRoot bool)
	walk = func(q qdisc.Qdisc, n *tnode, parent qdisc.ClassID, isRoot bool) {
		for _, q := range qdisc.Positions(q) {
			if n == nil {
				return
			}
			h := qdisc.MakeClassID(n.handle, 0)
			qs = append(qs, Placed{Qdisc: q, Handle: h, Parent: parent, Root: isRoot})
			switch x := q.(type) {
			case *qdisc.HTB:
				infos := x.Classes()
				for i := range infos {
					ci := &infos[i]
					pc := PlacedClass{Kind: "htb", ID: ci.Class.ID, Parent: ci.Class.Parent, HTB: ci}
					if pc.Parent == h || pc.Parent == 0 {
						pc.Parent, pc.Root = h, true
					}
					if l := n.leaves[ci.Class.ID.Minor()]; l != nil && !ci.DefaultLeaf {
						pc.Leaf = qdisc.MakeClassID(l.handle, 0)
					}
					cs = append(cs, pc)
				}
				for i := range infos {
					ci := &infos[i]
					if l := n.leaves[ci.Class.ID.Minor()]; l != nil && ci.Leaf != nil && !ci.DefaultLeaf {
						walk(ci.Leaf, l, ci.Class.ID, false)
					}
				}
				return
			case *qdisc.Prio:
				bands := x.Bands()
				for _, b := range bands {
					pc := PlacedClass{Kind: "prio", ID: b.Class, Parent: h, Band: b.Leaf}
					if l := n.leaves[b.Class.Minor()]; l != nil && !b.DefaultLeaf {
						pc.Leaf = qdisc.MakeClassID(l.handle, 0)
					}
					cs = append(cs, pc)
				}
				for _, b := range bands {
					if l := n.leaves[b.Class.Minor()]; l != nil && !b.DefaultLeaf {
						walk(b.Leaf, l, b.Class, false)
					}
				}
				return
			case *qdisc.Netem, *qdisc.TBF, *qdisc.RED:
				// Their one class, which tc lists: netem's only with a
				// child.
				_, isNetem := q.(*qdisc.Netem)
				if n.child != nil || !isNetem {
					pc := PlacedClass{Kind: q.Kind(), ID: qdisc.MakeClassID(n.handle, 1), Parent: h}
					if n.child != nil {
						pc.Leaf = qdisc.MakeClassID(n.child.handle, 0)
					}
					cs = append(cs, pc)
				}
			}
			parent, isRoot = qdisc.MakeClassID(n.handle, 1), false
			n = n.child
		}
	}
	walk(root, t.root, 0, true)
	return qs, cs
}
