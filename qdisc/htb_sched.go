package qdisc

import (
	"math/bits"
	"slices"

	"wanlab/clock"
)

// This file is sch_htb.c's scheduler: the three modes of a class, the
// rows and feeds that make a class reachable at a level and priority,
// the wait queues of the classes whose mode will change, the charging
// of a packet to a leaf and its ancestors, and the DRR lookup. The
// kernel keeps rows, feeds and wait queues in red-black trees; wanlab
// keeps them in sorted slices (a tree has a few dozen classes at most),
// sized when the tree is built, so that scheduling allocates nothing.

// htbMode is a class's mode (enum htb_cmode).
type htbMode uint8

const (
	htbCantSend  htbMode = iota // over its ceil: it may not send, nor borrow
	htbMayBorrow                // over its rate, under its ceil: it may borrow from its parent
	htbCanSend                  // under its rate
)

var htbModeNames = [...]string{htbCantSend: "cant_send", htbMayBorrow: "may_borrow", htbCanSend: "can_send"}

func (m htbMode) String() string { return htbModeNames[m] }

// htbPrio is a list of classes sorted by classid with a DRR pointer
// (struct htb_prio): a row (the classes of one level that may send at one
// priority) or an inner class's feed (its children that borrow from it at
// one priority).
type htbPrio struct {
	list []*htbClass
	ptr  *htbClass // the DRR pointer; nil past the end
	// lastID remembers the pointer's class when a feed lost it (the
	// class stopped borrowing), so that the pointer resumes there.
	lastID ClassID
}

// find returns the index of cl in the list, or where it would go.
func (p *htbPrio) find(id ClassID) (int, bool) {
	return slices.BinarySearchFunc(p.list, id, func(c *htbClass, id ClassID) int {
		switch {
		case c.id < id:
			return -1
		case c.id > id:
			return 1
		}
		return 0
	})
}

// add inserts cl in classid order (htb_add_to_id_tree).
func (p *htbPrio) add(cl *htbClass) {
	i, _ := p.find(cl.id)
	p.list = insertAt(p.list, i, cl)
}

// remove takes cl out of the list.
func (p *htbPrio) remove(cl *htbClass) {
	if i, ok := p.find(cl.id); ok {
		p.list = deleteAt(p.list, i)
	}
}

// insertAt inserts cl at i, and deleteAt deletes the class at i, element
// by element: the lists hold a few classes, for which this is cheaper
// than slices.Insert's and slices.Delete's bulk copies. Neither
// allocates while the list has room (see sizeLists).
func insertAt(l []*htbClass, i int, cl *htbClass) []*htbClass {
	l = append(l, nil)
	for j := len(l) - 1; j > i; j-- {
		l[j] = l[j-1]
	}
	l[i] = cl
	return l
}

func deleteAt(l []*htbClass, i int) []*htbClass {
	for j := i; j+1 < len(l); j++ {
		l[j] = l[j+1]
	}
	l[len(l)-1] = nil
	return l[:len(l)-1]
}

// next moves the pointer to the next class (htb_next_rb_node), nil past
// the last.
func (p *htbPrio) next() {
	if p.ptr == nil {
		return
	}
	i, _ := p.find(p.ptr.id)
	if i+1 < len(p.list) {
		p.ptr = p.list[i+1]
	} else {
		p.ptr = nil
	}
}

// nextUpper returns the first class whose id is id or above
// (htb_id_find_next_upper), or nil.
func (p *htbPrio) nextUpper(id ClassID) *htbClass {
	i, _ := p.find(id)
	if i < len(p.list) {
		return p.list[i]
	}
	return nil
}

// htbLevel is one level of the tree (struct htb_level): its wait queue,
// the classes of the level whose mode will change, by time, and its rows.
type htbLevel struct {
	wait  []*htbClass
	hprio [htbNumPrio]htbPrio
}

// addWait puts cl in its level's wait queue, to change mode in delay ns
// (htb_add_to_wait_tree): after the classes due at the same time.
func (q *HTB) addWait(cl *htbClass, delay int64) {
	cl.pqKey = q.now + clock.Time(delay)
	if cl.pqKey == q.now {
		cl.pqKey++
	}
	w := &q.levels[cl.level].wait
	i := len(*w)
	for i > 0 && (*w)[i-1].pqKey > cl.pqKey {
		i--
	}
	*w = insertAt(*w, i, cl)
}

// removeWait takes cl out of its level's wait queue.
func (q *HTB) removeWait(cl *htbClass) {
	w := &q.levels[cl.level].wait
	if i := slices.Index(*w, cl); i >= 0 {
		*w = deleteAt(*w, i)
	}
}

// addToRow makes cl reachable in its level's rows at the priorities of
// mask (htb_add_class_to_row).
func (q *HTB) addToRow(cl *htbClass, mask uint8) {
	q.rowMask[cl.level] |= mask
	for m := mask; m != 0; m &= m - 1 {
		q.levels[cl.level].hprio[bits.TrailingZeros8(m)].add(cl)
	}
}

// removeFromRow takes cl out of its level's rows at the priorities of
// mask (htb_remove_class_from_row); a row's pointer at cl moves on.
func (q *HTB) removeFromRow(cl *htbClass, mask uint8) {
	var emptied uint8
	for m := mask; m != 0; m &= m - 1 {
		prio := bits.TrailingZeros8(m)
		hp := &q.levels[cl.level].hprio[prio]
		if hp.ptr == cl {
			hp.next()
		}
		hp.remove(cl)
		if len(hp.list) == 0 {
			emptied |= 1 << prio
		}
	}
	q.rowMask[cl.level] &^= emptied
}

// activatePrios connects cl, whose mode is its new one, to its ancestors'
// feeds and to a row at the priorities it is active for
// (htb_activate_prios): a class that may borrow joins its parent's feed,
// and so on up while the parent borrows too; the first ancestor that may
// send itself joins its row.
func (q *HTB) activatePrios(cl *htbClass) {
	mask := cl.prioActivity
	p := cl.parent
	for cl.mode == htbMayBorrow && p != nil && mask != 0 {
		for m := mask; m != 0; m &= m - 1 {
			prio := bits.TrailingZeros8(m)
			f := &p.clprio[prio]
			if len(f.list) > 0 {
				// The parent is connected at this priority already.
				mask &^= 1 << prio
			}
			f.add(cl)
		}
		p.prioActivity |= mask
		cl, p = p, p.parent
	}
	if cl.mode == htbCanSend && mask != 0 {
		q.addToRow(cl, mask)
	}
}

// deactivatePrios undoes activatePrios for cl, whose mode is still its old
// one (htb_deactivate_prios): a feed's pointer at cl is forgotten but its
// classid kept, so that the feed resumes there.
func (q *HTB) deactivatePrios(cl *htbClass) {
	mask := cl.prioActivity
	p := cl.parent
	for cl.mode == htbMayBorrow && p != nil && mask != 0 {
		m := mask
		mask = 0
		for ; m != 0; m &= m - 1 {
			prio := bits.TrailingZeros8(m)
			f := &p.clprio[prio]
			if f.ptr == cl {
				f.lastID, f.ptr = cl.id, nil
			}
			f.remove(cl)
			if len(f.list) == 0 {
				mask |= 1 << prio
			}
		}
		p.prioActivity &^= mask
		cl, p = p, p.parent
	}
	if cl.mode == htbCanSend && mask != 0 {
		q.removeFromRow(cl, mask)
	}
}

// classMode returns cl's mode diff ns after its checkpoint and, when it
// is not htbCanSend, sets *diff to how long until it changes
// (htb_class_mode, without the hysteresis the kernel leaves off by
// default).
func classMode(cl *htbClass, diff *int64) htbMode {
	if toks := cl.ctokens + *diff; toks < 0 {
		*diff = -toks
		return htbCantSend
	}
	if toks := cl.tokens + *diff; toks >= 0 {
		return htbCanSend
	} else {
		*diff = -toks
	}
	return htbMayBorrow
}

// changeMode moves cl to its mode diff ns after its checkpoint
// (htb_change_class_mode), counting an overlimit when it can no longer
// send at all.
func (q *HTB) changeMode(cl *htbClass, diff *int64) {
	mode := classMode(cl, diff)
	if mode == cl.mode {
		return
	}
	if mode == htbCantSend {
		cl.overlimits++
		q.stats.Overlimits++
	}
	if cl.prioActivity == 0 {
		cl.mode = mode
		return
	}
	if cl.mode != htbCantSend {
		q.deactivatePrios(cl)
	}
	cl.mode = mode
	if mode != htbCantSend {
		q.activatePrios(cl)
	}
}

// activate makes leaf cl active at its priority (htb_activate): it has
// packets.
func (q *HTB) activate(cl *htbClass) {
	if cl.prioActivity == 0 {
		cl.prioActivity = 1 << cl.prio
		q.activatePrios(cl)
		q.active++
	}
}

// deactivate makes leaf cl inactive (htb_deactivate): it has no packets.
func (q *HTB) deactivate(cl *htbClass) {
	if cl.prioActivity == 0 {
		return
	}
	q.deactivatePrios(cl)
	cl.prioActivity = 0
	q.active--
}

// accnt charges n bytes at r to a bucket of tokens that holds at most
// depth, diff ns after its checkpoint (htb_accnt_tokens,
// htb_accnt_ctokens): the debt is bounded by mbuffer.
func accnt(tokens *int64, depth int64, r *rateCfg, n int, diff, mbuffer int64) {
	toks := min(diff+*tokens, depth) - r.l2t(n)
	if toks <= -mbuffer {
		toks = 1 - mbuffer
	}
	*tokens = toks
}

// charge charges a unit of n bytes (segs wire segments) that leaf cl sent
// at level to cl and its ancestors (htb_charge_class): every class's
// ceil; the rate of those at level and above, the class at level
// counting a lend; those below only move their checkpoint, counting a
// borrow. Each class then takes its new mode.
func (q *HTB) charge(cl *htbClass, level, n, segs int) {
	for c := cl; c != nil; c = c.parent {
		diff := min(int64(q.now-c.tc), c.mbuffer)
		if c.level >= level {
			if c.level == level {
				c.lends++
			}
			accnt(&c.tokens, c.buffer, &c.rate, n, diff, c.mbuffer)
		} else {
			c.borrows++
			c.tokens += diff
		}
		accnt(&c.ctokens, c.cbuffer, &c.ceil, n, diff, c.mbuffer)
		c.tc = q.now
		old := c.mode
		var d int64
		q.changeMode(c, &d)
		if old != c.mode {
			if old != htbCanSend {
				q.removeWait(c)
			}
			if c.mode != htbCanSend {
				q.addWait(c, d)
			}
		}
		if c.level > 0 {
			// A leaf counted the unit as it took it.
			c.bytes += uint64(n)
			c.packets += uint64(segs)
		}
	}
}

// doEvents applies the mode changes due by q.now at level
// (htb_do_events) and returns the time of the next one, or 0 for none.
// (The kernel stops after two jiffies and tries again later; a virtual
// clock has no jiffies to lose.)
func (q *HTB) doEvents(level int) clock.Time {
	w := &q.levels[level].wait
	for len(*w) > 0 {
		cl := (*w)[0]
		if cl.pqKey > q.now {
			return cl.pqKey
		}
		*w = deleteAt(*w, 0)
		diff := min(int64(q.now-cl.tc), cl.mbuffer)
		q.changeMode(cl, &diff)
		if cl.mode != htbCanSend {
			q.addWait(cl, diff)
		}
	}
	return 0
}

// lookupLeaf returns the leaf the DRR pointers lead to from row hp at
// prio (htb_lookup_leaf): down from the row's pointer through the
// pointers of each inner class's feed; a pointer past the end of its
// list goes back to the list's first class and moves the pointer above
// it on, so that the next lookup visits the next sibling.
func (q *HTB) lookupLeaf(hp *htbPrio, prio int) *htbClass {
	if len(hp.list) == 0 {
		return nil
	}
	var stk [htbMaxDepth]*htbPrio
	sp := 0
	stk[0] = hp
	for range 65535 {
		p := stk[sp]
		if p.ptr == nil && p.lastID != 0 {
			// The pointer was lost with a class that stopped
			// borrowing: resume at it, or at the next one.
			p.ptr = p.nextUpper(p.lastID)
		}
		p.lastID = 0
		if p.ptr == nil {
			if len(p.list) == 0 {
				return nil
			}
			p.ptr = p.list[0]
			if sp > 0 {
				sp--
				if stk[sp].ptr == nil {
					return nil
				}
				stk[sp].next()
			}
			continue
		}
		cl := p.ptr
		if cl.level == 0 {
			return cl
		}
		if sp+1 >= len(stk) {
			return nil
		}
		sp++
		stk[sp] = &cl.clprio[prio]
	}
	return nil
}

// feedOf returns the list through which leaf cl was reached at level:
// its parent's feed at prio, or the row at level 0.
func (q *HTB) feedOf(cl *htbClass, prio, level int) *htbPrio {
	if level > 0 {
		return &cl.parent.clprio[prio]
	}
	return &q.levels[0].hprio[prio]
}
