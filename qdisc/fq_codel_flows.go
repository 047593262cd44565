package qdisc

// fqFlow is one flow queue of fq_codel or fq_pie: a FIFO and its DRR
// deficit, linked into at most one of the scheduler's lists. Its ring is
// allocated on first use and kept, so steady state allocates nothing. Each
// discipline keeps its AQM's state per flow beside the table (fq_codel's
// CoDel, fq_pie's PIE), indexed alike.
type fqFlow struct {
	q       ring
	deficit int32
	next    int32 // next flow on the same list, or -1
	list    fqListID
}

// fqListID says which scheduler list a flow is on.
type fqListID uint8

const (
	fqNoList fqListID = iota
	fqNewList
	fqOldList
)

// fqList is an intrusive singly linked list of flow indices. fq_codel and
// fq_pie only ever take flows off the front of a list (to its tail, to the
// old list, or out), so one link per flow suffices.
type fqList struct {
	head, tail int32 // -1 when empty
	n          int
	id         fqListID
}

func newFQList(id fqListID) fqList { return fqList{head: -1, tail: -1, id: id} }

func (l *fqList) empty() bool { return l.head < 0 }

// pushBack appends flow i, which must be on no list.
func (l *fqList) pushBack(flows []fqFlow, i int32) {
	f := &flows[i]
	f.next = -1
	f.list = l.id
	if l.tail < 0 {
		l.head = i
	} else {
		flows[l.tail].next = i
	}
	l.tail = i
	l.n++
}

// popFront unlinks and returns the first flow; the list must not be empty.
func (l *fqList) popFront(flows []fqFlow) int32 {
	i := l.head
	f := &flows[i]
	l.head = f.next
	if l.head < 0 {
		l.tail = -1
	}
	f.next = -1
	f.list = fqNoList
	l.n--
	return i
}

// fqSched is the flow table and the deficit round robin that fq_codel
// (sch_fq_codel.c) and fq_pie (sch_fq_pie.c) share: a flow that becomes
// active joins the new list with a quantum of credit; the dequeue serves
// the head of the new list, else of the old one; a flow whose credit is
// spent gets another quantum and goes to the end of the old list; a flow
// found empty leaves its list.
type fqSched struct {
	flows        []fqFlow
	newFlows     fqList
	oldFlows     fqList
	quantum      int32
	newFlowCount uint32 // times a flow became a new flow
}

// newFQSched returns a table of n flows, all empty and on no list.
func newFQSched(n int) fqSched {
	s := fqSched{flows: make([]fqFlow, n)}
	s.unlinkAll()
	return s
}

// unlinkAll empties both lists and leaves every flow on none, its packets
// where they are.
func (s *fqSched) unlinkAll() {
	for i := range s.flows {
		s.flows[i].next, s.flows[i].list = -1, fqNoList
	}
	s.newFlows, s.oldFlows = newFQList(fqNewList), newFQList(fqOldList)
}

// activate puts flow idx, which a packet has just joined, on the new list
// with a quantum of credit if it is on no list, and reports whether it was.
func (s *fqSched) activate(idx int32) bool {
	f := &s.flows[idx]
	if f.list != fqNoList {
		return false
	}
	s.newFlows.pushBack(s.flows, idx)
	s.newFlowCount++
	f.deficit = s.quantum
	return true
}

// head returns the flow DRR serves next: the head of the new list, else of
// the old list, after giving each flow whose deficit is spent a quantum
// and moving it to the end of the old list. It returns -1 when both lists
// are empty.
func (s *fqSched) head() int32 {
	for {
		l := &s.newFlows
		if l.empty() {
			l = &s.oldFlows
			if l.empty() {
				return -1
			}
		}
		idx := l.head
		f := &s.flows[idx]
		if f.deficit <= 0 {
			f.deficit += s.quantum
			s.oldFlows.pushBack(s.flows, l.popFront(s.flows))
			continue
		}
		return idx
	}
}

// retire takes flow idx, the head that head returned and that yielded
// nothing, off its list: an emptied new flow goes through the old list
// before it is unlinked, so that it cannot starve the old flows by turning
// new again and again.
func (s *fqSched) retire(idx int32) {
	l := &s.oldFlows
	if s.flows[idx].list == fqNewList {
		l = &s.newFlows
	}
	l.popFront(s.flows)
	if l.id == fqNewList && !s.oldFlows.empty() {
		s.oldFlows.pushBack(s.flows, idx)
	}
}
