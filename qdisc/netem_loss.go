package qdisc

import "math"

// States of the kernel's loss models, named as in sch_netem.c (the
// kernel's numbers differ from the paper's: the paper's state 3, "lost in a
// burst", is the kernel's 4, and its 4, "isolated loss", the kernel's 3).
const (
	txInGap     = 1 // paper's 1: received, in a gap period
	txInBurst   = 2 // paper's 2: received, in a burst period
	lostInGap   = 3 // paper's 4: isolated loss within a gap
	lostInBurst = 4 // paper's 3: lost, in a burst
	geGood      = 1
	geBad       = 2
)

// lossModel is netem's loss decision: random (correlated), the 4-state
// Markov model of the GI loss model, or Gilbert-Elliott. The Markov models
// compare u32 draws with the thresholds tc sends, with the kernel's strict
// inequalities (a draw equal to a threshold changes nothing), in both
// correlation modes; only the source of the draws differs. Sums of two
// thresholds are taken in 64 bits: the kernel's u32 sum wraps when two
// probabilities add up to exactly 100%, after rounding.
type lossModel struct {
	kind   LossKind
	random event
	// 4-state: a1 p13, a2 p31, a3 p32, a4 p14, a5 p23. GE: a1 p, a2 r,
	// a3 h (tc sends UINT32_MAX - rint((1-h)*UINT32_MAX)), a4 1-k.
	a1, a2, a3, a4, a5 uint32
	state              uint8
}

func (m *lossModel) init(r *netemRand, l Loss) {
	*m = lossModel{kind: l.Kind}
	m.random.init(r, l.P, l.Corr)
	switch l.Kind {
	case LossState:
		m.state = txInGap
		m.a1, m.a2, m.a3 = kernelProb(l.P13), kernelProb(l.P31), kernelProb(l.P32)
		m.a4, m.a5 = kernelProb(l.P14), kernelProb(l.P23)
	case LossGEModel:
		m.state = geGood
		m.a1, m.a2 = kernelProb(l.GEP), kernelProb(l.GER)
		m.a3 = math.MaxUint32 - kernelProb(l.OneMinusH)
		m.a4 = kernelProb(l.OneMinusK)
	}
}

// lost draws the loss decision for one packet.
func (m *lossModel) lost(r *netemRand) bool {
	switch m.kind {
	case LossRandom:
		return m.random.enable && m.random.fire(r)
	case LossState:
		return m.fourState(r.u32())
	case LossGEModel:
		return m.gilbertElliott(r)
	}
	return false
}

func (m *lossModel) fourState(rnd uint32) bool {
	switch m.state {
	case txInGap:
		switch {
		case rnd < m.a4:
			m.state = lostInGap
			return true
		case m.a4 < rnd && uint64(rnd) < uint64(m.a1)+uint64(m.a4):
			m.state = lostInBurst
			return true
		case uint64(m.a1)+uint64(m.a4) < uint64(rnd):
			m.state = txInGap
		}
	case txInBurst:
		if rnd < m.a5 {
			m.state = lostInBurst
			return true
		}
	case lostInBurst:
		switch {
		case rnd < m.a3:
			m.state = txInBurst
		case m.a3 < rnd && uint64(rnd) < uint64(m.a2)+uint64(m.a3):
			m.state = txInGap
		case uint64(m.a2)+uint64(m.a3) < uint64(rnd):
			return true
		}
	case lostInGap:
		m.state = txInGap
	}
	return false
}

// gilbertElliott draws the state transition, then the loss with the
// probability of the state the packet started in.
func (m *lossModel) gilbertElliott(r *netemRand) bool {
	if m.state == geGood {
		if r.u32() < m.a1 {
			m.state = geBad
		}
		return r.u32() < m.a4
	}
	if r.u32() < m.a2 {
		m.state = geGood
	}
	return r.u32() > m.a3
}

// StateLoss returns "loss state p13" with tc's defaults for the other
// transitions: p31 = 1-p13, p32 = 0, p23 = 1, p14 = 0 (a Bernoulli loss).
func StateLoss(p13 float64) Loss {
	return Loss{Kind: LossState, P13: p13, P31: 1 - p13, P23: 1}
}

// GELoss returns "loss gemodel p" with tc's defaults: r = 1-p, 1-h = 100%,
// 1-k = 0% (the simple Gilbert model).
func GELoss(p float64) Loss {
	return Loss{Kind: LossGEModel, GEP: p, GER: 1 - p, OneMinusH: 1}
}
