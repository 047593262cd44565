package tfrc

// NumLossIntervals is n of RFC 5348 §5.4: how many loss intervals the
// average weighs.
const NumLossIntervals = 8

// lossWeights are the weights of RFC 5348 §5.4 for n = 8: w_i = 1 for
// 0 <= i < n/2 and w_i = 2·(n-i)/(n+2) for n/2 <= i < n.
var lossWeights = [NumLossIntervals]float64{1, 1, 1, 1, 0.8, 0.6, 0.4, 0.2}

// LossWeight returns w_i of RFC 5348 §5.4 for n = NumLossIntervals.
func LossWeight(i int) float64 { return lossWeights[i] }

// MeanLossInterval returns I_mean of RFC 5348 §5.4 for the open interval i0
// (packets since the start of the latest loss event) and the closed
// intervals closed, most recent first (closed[0] is I_1); only the first
// NumLossIntervals are used. With k closed intervals:
//
//	I_tot0 = Σ_{i=0}^{k-1} I_i·w_i      (with the open interval)
//	I_tot1 = Σ_{i=1}^{k}   I_i·w_{i-1}  (without it)
//	I_mean = max(I_tot0, I_tot1) / Σ_{i=0}^{k-1} w_i
//
// so the open interval counts only when it raises the mean. It returns 0
// when there is no closed interval (no loss yet: p is 0).
func MeanLossInterval(i0 float64, closed []float64) float64 {
	k := min(len(closed), NumLossIntervals)
	if k == 0 {
		return 0
	}
	var tot0, tot1, wtot float64
	for i := 0; i < k; i++ {
		w := lossWeights[i]
		wtot += w
		tot1 += closed[i] * w
		if i == 0 {
			tot0 += i0 * w
		} else {
			tot0 += closed[i-1] * w
		}
	}
	return max(tot0, tot1) / wtot
}

// lossHistory is the receiver's record of loss events (RFC 5348 §5.2-5.4):
// where the latest one started, and the lengths of the closed intervals
// before it.
type lossHistory struct {
	// closed holds I_1..I_k, most recent first.
	closed  [NumLossIntervals]float64
	nClosed int
	// events counts loss events since the start.
	events uint64
	// openStart is the sequence number of the first packet lost in the
	// latest loss event, and openAt its (interpolated) time, T_old of
	// §5.2.
	openStart uint64
	openAt    int64
}

// started reports whether a loss event has happened.
func (h *lossHistory) started() bool { return h.events > 0 }

// push records the start of a new loss event at sequence number seq and
// time at. The interval it closes has the length of the packets from the
// previous event's first loss up to seq, or first for the first event
// (the interval that §6.3.1 synthesises).
func (h *lossHistory) push(seq uint64, at int64, first float64) {
	length := first
	if h.started() {
		length = float64(seq - h.openStart)
	}
	copy(h.closed[1:], h.closed[:NumLossIntervals-1])
	h.closed[0] = length
	h.nClosed = min(h.nClosed+1, NumLossIntervals)
	h.openStart, h.openAt = seq, at
	h.events++
}

// p returns the loss event rate given hi, the highest sequence number
// received: 1/I_mean with I_0 = hi - openStart + 1.
func (h *lossHistory) p(hi uint64) float64 {
	if !h.started() {
		return 0
	}
	i0 := float64(hi-h.openStart) + 1
	m := MeanLossInterval(i0, h.closed[:h.nClosed])
	if m < 1 {
		// An interval is at least one packet; a synthesised one could be
		// shorter only through a rate below the equation's range.
		return 1
	}
	return 1 / m
}
