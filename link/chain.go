package link

import (
	"wanlab/clock"
	"wanlab/packet"
	"wanlab/qdisc"
)

// tap stands in for the root of a tree as its Env.Root, through which
// disciplines inject packets of their own (netem's duplicates re-enter the
// whole tree there, as the kernel's rootq->enqueue). It counts them so that
// every packet inside the direction is accounted for.
type tap struct {
	d *Direction
	qdisc.Qdisc
}

// Enqueue counts p as a duplicate and offers it to the root.
func (t *tap) Enqueue(now clock.Time, p *packet.Packet) qdisc.Verdict {
	d := t.d
	d.total.c.Duplicated++
	if d.perFlow {
		d.flow(p.Flow).c.Duplicated++
	}
	if d.hook != nil {
		d.emit(now, Enqueue, qdisc.ReasonNone, nil, p)
	}
	return t.Qdisc.Enqueue(now, p)
}

// SetChain replaces the qdisc tree with one built from chain (empty for a
// direct path), as `tc qdisc replace` would, but without losing packets:
// the packets the old tree holds are moved into the new one, in the order
// the old tree would have sent them, at the time of the direction's latest
// Enqueue or Dequeue. The new tree treats them as new arrivals (netem
// delays them again; a limit may drop them, which is reported as usual);
// their Arrival, and so their measured delay, is kept. A packet partly sent
// on a trace's opportunities stays on the wire.
//
// Moving needs the old root to implement Drainer. If it does not, the old
// tree is kept aside and keeps releasing its packets, ahead of the new
// tree's, until it is empty; only new arrivals enter the new tree.
//
// If the new tree cannot be built, the error is returned and the old tree
// stays in place.
func (d *Direction) SetChain(chain []qdisc.Spec) error {
	return d.SetRoot(chainBuilder(chain))
}

// SetRoot is SetChain with the new tree made by build (nil for a direct
// path), as Config.Build.
func (d *Direction) SetRoot(build func(env *qdisc.Env) (qdisc.Qdisc, error)) error {
	root, q, env, err := d.buildTree(build)
	if err != nil {
		return err
	}
	old := d.q
	d.root, d.q, d.env = root, q, env
	d.wait = 0
	if dr, ok := old.(Drainer); ok {
		now := d.now
		dr.Drain(func(p *packet.Packet) { q.Enqueue(now, p) })
		return nil
	}
	if old.Len() > 0 {
		d.retiring = append(d.retiring, old)
	}
	return nil
}
