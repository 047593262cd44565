package router

import (
	"testing"
	"time"

	"wanlab/clock"
)

// superSize is the size of the model's super-packets.
const superSize = 64 << 10

// measured returns a pacer that has measured releases costing w per
// super-packet of superSize bytes, with no credit at now.
func measured(t *testing.T, now clock.Time, w time.Duration) *readPacer {
	t.Helper()
	var p readPacer
	p.refill(now)
	for range 40 * costWindow / superSize { // enough windows for the average to settle
		p.charge(now, superSize, 1, superSize, 0)
		p.releasedFor(superSize, w)
	}
	p.update()
	p.credit, p.next = 0, 0
	p.refill(now)
	if got := time.Duration(p.writeCost * superSize); got < w*99/100 || got > w*101/100 {
		t.Fatalf("write cost %v a super-packet after releases of %v each", got, w)
	}
	return &p
}

// TestPacerAllowsAllUntilMeasured checks that a pacer that has not yet
// measured what releases cost holds nothing back, also after many reads
// without releases (behind a delay line).
func TestPacerAllowsAllUntilMeasured(t *testing.T) {
	var p readPacer
	p.refill(1)
	now := clock.Time(1)
	for range 1000 {
		p.charge(now, superSize, 1, superSize, 10*time.Microsecond)
		now += clock.Time(10 * time.Microsecond)
		p.refill(now)
		p.update()
	}
	if got := p.allowance(now); got != unpaced {
		t.Errorf("allowance %d before any release, want unpaced", got)
	}
	if d := p.wait(now); d != 0 {
		t.Errorf("wait %v before any release, want 0", d)
	}
}

// TestPacerChargesSuperPacketsOnly checks that reads of packets of one MTU
// never hold reads back, and that super-packets pay for their share of a
// read and their release.
func TestPacerChargesSuperPacketsOnly(t *testing.T) {
	const w = 30 * time.Microsecond
	now := clock.Time(time.Hour)
	p := measured(t, now, w)
	p.credit = maxCredit
	for range 1000 {
		p.charge(now, 8*1500, 0, 0, 8*time.Microsecond)
		if got := p.allowance(now); got != 1 {
			t.Fatalf("allowance %d after reads of small packets only, want 1", got)
		}
	}
	if p.credit != maxCredit {
		t.Fatalf("credit %v after reads of small packets only, want %v untouched", p.credit, maxCredit)
	}
	// A read of one super-packet and three small packets that took 20 µs.
	took := 20 * time.Microsecond
	share := time.Duration(float64(took) * superSize / (superSize + 3*1500))
	p.charge(now, superSize+3*1500, 1, superSize, took)
	want := maxCredit - share - w
	if d := p.credit - want; d < -time.Microsecond || d > time.Microsecond {
		t.Errorf("credit %v after a mixed read, want %v", p.credit, want)
	}
}

// TestPacerCreditAndSpacing checks that a loop idle for a long time may
// commit itself to at most maxCredit of work, that super-packets are read
// no closer than minSpacing of their cost even on credit, and that a read
// is held back once the credit is spent, until the time it overspent has
// passed.
func TestPacerCreditAndSpacing(t *testing.T) {
	const r, w = 10 * time.Microsecond, 30 * time.Microsecond
	now := clock.Time(time.Hour)
	p := measured(t, now, w)
	now += clock.Time(time.Second)
	p.refill(now)
	if p.credit != maxCredit {
		t.Fatalf("credit %v after an idle second, want the bound %v", p.credit, maxCredit)
	}
	cost := r + time.Duration(p.writeCost*superSize)
	spacing := time.Duration(minSpacing * float64(cost))
	reads := 0
	for {
		if got := p.allowance(now); got != 1 {
			t.Fatalf("allowance %d after waiting, want 1", got)
		}
		p.charge(now, superSize, 1, superSize, r)
		reads++
		gap := p.wait(now)
		if p.credit <= 0 {
			if want := -p.credit + 1; gap != max(want, spacing) {
				t.Fatalf("wait %v with credit %v, want %v", gap, p.credit, max(want, spacing))
			}
			break
		}
		if gap < spacing-time.Microsecond || gap > spacing+time.Microsecond {
			t.Fatalf("next read %v after one, want %v, minSpacing of its cost", gap, spacing)
		}
		now += clock.Time(gap)
		p.refill(now)
		if reads > 1000 {
			t.Fatal("the credit is never spent")
		}
	}
	// The first read costs its whole cost, and each one after pays for
	// what the spacing saves, cost-spacing, until the credit is spent.
	if want := 2 + int((maxCredit-cost)/(cost-spacing)); reads < want-1 || reads > want+1 {
		t.Errorf("%d reads on credit, want about %d", reads, want)
	}
	if got := p.allowance(now); got != 0 {
		t.Fatalf("allowance %d with credit %v, want 0", got, p.credit)
	}
	now += clock.Time(p.wait(now))
	p.refill(now)
	if got := p.allowance(now); got != 1 {
		t.Errorf("allowance %d after the wait, want 1", got)
	}
}

// TestPacerDescheduledRelease checks that a release during which the
// thread was descheduled counts at most maxOutlier times what the estimate
// says, and that a loop whose releases all take longer (one that shares
// its CPU for good) raises the estimate with them.
func TestPacerDescheduledRelease(t *testing.T) {
	const w = 20 * time.Microsecond
	now := clock.Time(time.Hour)
	p := measured(t, now, w)
	before := p.perByte
	p.releasedFor(superSize, 5*time.Millisecond)
	if want := maxOutlier * before * superSize; float64(p.relTime) > want*1.001 {
		t.Errorf("a 5 ms release counted %v, want at most %v", p.relTime, time.Duration(want))
	}
	for range 40 * costWindow / superSize {
		p.charge(now, superSize, 1, superSize, 0)
		p.releasedFor(superSize, 2*w)
	}
	p.update()
	if got := time.Duration(p.writeCost * superSize); got < 2*w*95/100 || got > 2*w*105/100 {
		t.Errorf("write cost %v a super-packet after releases of %v each, want about %v", got, 2*w, 2*w)
	}
}

// TestPacerNewChain checks that after a chain change the pacer charges by
// what the new chain releases: a chain that drops half of what it reads
// costs half as much a byte read, at once, not after the old chain's
// ratio has aged out.
func TestPacerNewChain(t *testing.T) {
	const w = 20 * time.Microsecond
	now := clock.Time(time.Hour)
	p := measured(t, now, w)
	p.newChain()
	if got := p.allowance(now); got != unpaced {
		t.Fatalf("allowance %d right after a new chain, want unpaced until its first release", got)
	}
	for range 64 {
		p.charge(now, 2*superSize, 2, 2*superSize, 0)
		p.releasedFor(superSize, w) // one of every two dropped
	}
	p.update()
	if got, want := time.Duration(p.writeCost*superSize), w/2; got < want*95/100 || got > want*105/100 {
		t.Errorf("write cost %v a super-packet read under a chain that drops half, want about %v", got, want)
	}
}

// delayLine runs a model of a loop on a virtual clock for a second (its
// pacer having measured what releases cost before): a ring that always
// holds super-packets, reads costing r each, a constant delay, releases
// costing w each (the loop releases what is due first, and reads no
// further than the next deadline, as loop.readAllowance does), with the
// pacer or without (reading a batch whenever nothing is due). It returns the largest release lateness after the
// first 100 ms, and how many packets it released.
func delayLine(t *testing.T, r, w, delay time.Duration, paced bool) (time.Duration, int) {
	now := clock.Time(time.Hour)
	p := measured(t, now, w)
	var due []clock.Time
	var worst time.Duration
	released := 0
	begin, end := now+clock.Time(100*time.Millisecond), now+clock.Time(time.Second)
	for now < end {
		start := now
		n := 0
		for len(due) > 0 && due[0] <= now {
			if now > begin {
				worst = max(worst, time.Duration(now-due[0]))
			}
			due = due[1:]
			now += clock.Time(w)
			n++
		}
		released += n
		if n > 0 {
			p.releasedFor(n*superSize, time.Duration(now-start))
		}
		p.refill(now)
		p.update()
		k := readBatch
		if a := p.allowance(now); paced && a != unpaced {
			k = a
		}
		if k > 0 && len(due) > 0 {
			if left := time.Duration(due[0] - now); left < time.Duration(k)*r {
				k = max(1, int(left/r))
			}
		}
		if k == 0 {
			next := now + clock.Time(p.wait(now))
			if len(due) > 0 && due[0] < next {
				next = due[0]
			}
			now = max(next, now+1)
			continue
		}
		at := now
		for range k {
			due = append(due, now+clock.Time(delay))
			now += clock.Time(r)
		}
		p.charge(at, k*superSize, k, k*superSize, time.Duration(k)*r)
	}
	return worst, released
}

// TestPacerKeepsADelayLineOnTime checks the pacer's purpose on a model of
// a loop behind a delay line, with the costs of super-packets seen on
// this kind of machine (a read of 9 to 15 µs, a release of 25): reads
// cheaper than releases, unpaced, make bursts that leave milliseconds
// late; paced, every packet leaves within about the credit's worth of
// work of its time, and the loop still releases nearly all it can handle,
// 1/(r+w) a second. Where a release costs eight times a read, the model
// settles into a slower rhythm (a read waits for the spacing, a release
// then holds it up, and the next spacing starts late): about 70 %.
func TestPacerKeepsADelayLineOnTime(t *testing.T) {
	for _, c := range []struct {
		r, w  time.Duration
		share float64
	}{
		{15 * time.Microsecond, 25 * time.Microsecond, 0.95},
		{9 * time.Microsecond, 26 * time.Microsecond, 0.95},
		{5 * time.Microsecond, 40 * time.Microsecond, 0.65},
	} {
		late, _ := delayLine(t, c.r, c.w, 10*time.Millisecond, false)
		if late < time.Millisecond {
			t.Errorf("read %v, release %v, unpaced: worst lateness %v; the model shows no problem to solve", c.r, c.w, late)
		}
		late, n := delayLine(t, c.r, c.w, 10*time.Millisecond, true)
		if limit := maxCredit + 2*(c.r+c.w); late > limit {
			t.Errorf("read %v, release %v, paced: worst lateness %v, want at most %v", c.r, c.w, late, limit)
		}
		most := float64(time.Second-10*time.Millisecond) / float64(c.r+c.w)
		if float64(n) < c.share*most {
			t.Errorf("read %v, release %v, paced: %d released in a second, want at least %.0f%% of %.0f", c.r, c.w, n, 100*c.share, most)
		}
	}
}
