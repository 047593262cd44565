package stats

// Reorder applies RFC 4737's reordered-singleton test (section 3.3) to the
// packets of one flow in the order they arrive at the measurement point: a
// packet whose sequence number is lower than the highest one seen before
// it is reordered. An equal number (a duplicate) is not. The zero value
// has seen nothing. It allocates nothing.
type Reorder struct {
	highest int64
	seen    bool
}

// Arrive takes the next packet's sequence number and reports whether that
// packet is reordered.
func (r *Reorder) Arrive(seq int64) bool {
	if r.seen && seq < r.highest {
		return true
	}
	r.highest, r.seen = seq, true
	return false
}
