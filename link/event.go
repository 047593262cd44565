package link

import (
	"wanlab/clock"
	"wanlab/packet"
	"wanlab/qdisc"
)

// EventKind says what happened to a packet.
type EventKind uint8

// Event kinds, in the order a packet's life can show them.
const (
	// Enqueue: the packet entered the direction (or, for a duplicate, the
	// qdisc tree).
	Enqueue EventKind = iota
	// Mark: a discipline set CE on the packet; it stays queued.
	Mark
	// Drop: a discipline discarded the packet; it is freed after the hook
	// returns.
	Drop
	// Dequeue: the packet left the direction.
	Dequeue
)

var kindNames = [...]string{Enqueue: "enqueue", Mark: "mark", Drop: "drop", Dequeue: "dequeue"}

// String returns the kind's lowercase name.
func (k EventKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// Event describes one thing that happened to one packet.
type Event struct {
	Time clock.Time
	Kind EventKind
	// Reason is why a packet was dropped or marked (ReasonNone otherwise).
	Reason qdisc.Reason
	// Qdisc is the discipline instance that dropped or marked the packet
	// (nil for Enqueue and Dequeue); Qdisc.Kind() names its kind.
	Qdisc qdisc.Qdisc
	// Packet is the packet concerned. It belongs to the direction: a hook
	// may read it during the call but must not keep it.
	Packet *packet.Packet
}

// Hook is told about every event of a direction, synchronously. The Event
// is reused from call to call (so that reporting allocates nothing): a hook
// that keeps anything must copy it.
type Hook interface {
	Event(e *Event)
}
