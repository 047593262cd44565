package qdisc

// fqFlow is one of fq_codel's flow queues: a FIFO with its own CoDel state
// and DRR deficit, linked into at most one of the scheduler's lists. Its
// ring is allocated on first use and kept, so steady state allocates
// nothing.
type fqFlow struct {
	q       ring
	vars    codelVars
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

// fqList is an intrusive singly linked list of flow indices. fq_codel only
// ever takes flows off the front of a list (to its tail, to the old list,
// or out), so one link per flow suffices.
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
