package link

import (
	"fmt"

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
	d.duplicated(p)
	if d.hook != nil {
		d.emit(now, Enqueue, qdisc.ReasonNone, nil, p)
	}
	return t.Qdisc.Enqueue(now, p)
}

// SetChain changes the direction's chain to chain (empty for a direct
// path) as tc commands would, position by position (qdisc.ChangeChain),
// at the time of the direction's latest Enqueue or Dequeue: a discipline
// whose kind stays at its position is changed in place and keeps its
// packets; from the first position where the kind differs, or where one
// chain is longer, the old disciplines are replaced or removed and their
// packets lost, counted as drops with qdisc.ReasonFlushed, so that Sent +
// Duplicated = Delivered + Dropped + Queued still holds. The queue of a
// direct path (which holds packets only with a trace, as mahimahi's queue)
// is flushed the same way when a chain replaces it. Packets on a trace's
// wire, partly or fully sent, stay there.
//
// Everything is checked first: on an error nothing has changed. The report
// says, per position, what happened and how many packets the change
// dropped (to a lower limit) or flushed.
func (d *Direction) SetChain(chain []qdisc.Spec) (qdisc.ChainChange, error) {
	now := d.now
	root, rep, err := qdisc.ChangeChain(now, d.root, chain, d.env)
	if err != nil {
		return nil, d.errorf(err)
	}
	if d.root == nil && root != nil {
		if n := d.q.Len(); n > 0 {
			rep[0].Flushed += n
			d.q.Flush(now)
		}
	}
	if root == d.root {
		d.env.Root = d.tap // ChangeChain pointed it at the root itself
	} else {
		d.setRoot(root)
	}
	d.wait = 0
	return rep, nil
}

// errorf says which direction err is about.
func (d *Direction) errorf(err error) error {
	if d.name == "" {
		return err
	}
	return fmt.Errorf("%s: %w", d.name, err)
}

// CheckChain reports whether SetChain(chain) would succeed, without
// changing anything, so that a caller can check several directions before
// changing any.
func (d *Direction) CheckChain(chain []qdisc.Spec) error {
	if err := qdisc.CheckChain(d.root, chain, d.env); err != nil {
		return d.errorf(err)
	}
	return nil
}
