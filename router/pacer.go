package router

import (
	"time"

	"wanlab/clock"
)

// readPacer keeps a loop from taking GSO super-packets in faster than it
// can later release them.
//
// One thread both reads a direction's packets (which stamps their arrival)
// and writes them when they are due. A super-packet is read in about 15 µs,
// but its write, which runs the receiving host's IP and TCP input over up
// to 64 KiB on the writer's thread, takes 25 µs or more. A loop that read
// whenever super-packets waited took them in in bursts faster than it
// could release them; a delay line made each burst due at once, and its
// last packets left hundreds of microseconds late: a queue after the
// emulated path, which lengthened the configured delay.
//
// So each super-packet read pays, out of a credit, for its share of the
// read's time and for what releasing its bytes costs (writeCost per byte,
// measured), and the next may be read only a little before that cost has
// passed (minSpacing): reads taken in back to back, even on credit saved,
// would be due back to back, and released late one behind the other.
// The credit grows with wall time up to maxCredit. A loop with time to
// spare always has credit; one that cannot keep up leaves packets in the
// ring in front of it, where they wait as in front of a slower interface
// (the sending host's TCP feels that as back-pressure), and the time it
// holds reads back is counted (dirStats.held) and judged as saturation
// (fidelity.Judge).
//
// Packets of one MTU are not charged: their writes are cheap, and those
// that arrive together leave together, coalesced into one write (USO,
// GRO), which pacing them would spread apart and make dearer per packet.
// Nor is a loop held back before it has measured a release, or while its
// link holds nothing (loop.readAllowance): it then releases what it reads
// in the same pass.
type readPacer struct {
	credit time.Duration
	at     clock.Time // when credit was last brought up to date; 0 before the first pass
	next   clock.Time // no super-packet is read before this
	// writeCost is what releasing one byte read costs, in ns (see
	// update): what releases have cost per byte released lately, times
	// how many bytes the link released per byte read (fewer when it
	// drops). 0 until measured.
	writeCost float64
	// perByte is a moving average, over windows of costWindow bytes
	// released, of what a release cost per byte (releasedFor); relTime
	// and relBytes are the current window's.
	perByte  float64
	relTime  time.Duration
	relBytes int
	// readBytes and releasedBytes count the bytes read and released,
	// both halved whenever readBytes reaches ratioHorizon, so that their
	// ratio follows a new chain. The bytes in flight, read but not yet
	// released, make the ratio low by their share of the horizon (for a
	// while after the start, more), which errs on the side of reading.
	readBytes, releasedBytes int
}

const (
	// maxCredit bounds the credit a loop saves while it has time to spare:
	// the work a burst of reads may commit it to at once.
	maxCredit = 100 * time.Microsecond
	// costWindow is how many bytes released make one measurement of
	// perByte (16 super-packets of 64 KiB).
	costWindow = 1 << 20
	// ratioHorizon is about how many of the last bytes read the
	// released-per-read ratio stands for.
	ratioHorizon = 1 << 30
	// maxOutlier bounds the time counted for a release, in multiples of
	// what the estimate so far says it costs (see releasedFor).
	maxOutlier = 4
	// minSpacing is the share of a super-packet's cost that must pass
	// before the next is read: a little less than all of it, so that a
	// loop that fell behind catches up.
	minSpacing = 0.8
	// unpaced is what allowance returns when nothing limits reads.
	unpaced = -1
)

// refill brings the credit up to date at now.
func (p *readPacer) refill(now clock.Time) {
	if p.at != 0 && now > p.at {
		p.credit = min(p.credit+time.Duration(now-p.at), maxCredit)
	}
	p.at = now
}

// update computes writeCost. Per byte released, and not per byte read in
// the same time: those are the releases of packets read a delay earlier,
// whose number follows how fast the loop read then, and an estimate from
// them swings with it.
func (p *readPacer) update() {
	if p.perByte == 0 || p.readBytes == 0 {
		return
	}
	p.writeCost = p.perByte * float64(p.releasedBytes) / float64(p.readBytes)
}

// allowance returns how many super-packets may be read at now: unpaced
// before releases have been measured, else 0 while the credit is used up
// or the last super-packet's spacing has not passed, else one.
func (p *readPacer) allowance(now clock.Time) int {
	if p.writeCost == 0 {
		return unpaced
	}
	if p.credit <= 0 || now < p.next {
		return 0
	}
	return 1
}

// charge records a read begun at at that took took and brought in bytes,
// of which superBytes in n super-packets.
func (p *readPacer) charge(at clock.Time, bytes, n, superBytes int, took time.Duration) {
	p.readBytes += bytes
	if p.readBytes >= ratioHorizon {
		p.readBytes /= 2
		p.releasedBytes /= 2
	}
	if n == 0 || bytes == 0 {
		return
	}
	share := time.Duration(float64(took) * float64(superBytes) / float64(bytes))
	cost := share + time.Duration(p.writeCost*float64(superBytes))
	p.credit -= cost
	p.next = at + clock.Time(minSpacing*float64(cost))
}

// releasedFor records a release of bytes that took took. Wall time,
// because it is the loop's time that the pacer shares out, and a loop
// that shares its CPU for good takes that much longer for every release;
// but at most maxOutlier times what the estimate so far says, because a
// release during which the thread was descheduled for milliseconds (by a
// host's program on the same CPU, say) says nothing of what releases
// cost, and would hold reads back, for the windows it took part in, far
// below what the loop can do.
func (p *readPacer) releasedFor(bytes int, took time.Duration) {
	if p.perByte > 0 {
		took = min(took, time.Duration(maxOutlier*p.perByte*float64(bytes)))
	}
	p.releasedBytes += bytes
	p.relTime += took
	p.relBytes += bytes
	if p.relBytes >= costWindow {
		est := float64(p.relTime) / float64(p.relBytes)
		if p.perByte == 0 {
			p.perByte = est
		}
		p.perByte += (est - p.perByte) / 4
		p.relTime, p.relBytes = 0, 0
	}
}

// newChain forgets the released-per-read ratio of the chain before: a
// chain that drops more than the last one would otherwise be charged as
// if it released all it reads, until the horizon caught up (seconds at
// 10 Gbit/s, minutes at 100 Mbit/s). Until the new chain's first release
// nothing is held back.
func (p *readPacer) newChain() {
	p.readBytes, p.releasedBytes = 0, 0
	p.writeCost = 0
}

// wait returns how long from now, the time of the last refill, until a
// super-packet may be read.
func (p *readPacer) wait(now clock.Time) time.Duration {
	if p.writeCost == 0 {
		return 0
	}
	return max(-p.credit+1, time.Duration(p.next-now), 0)
}
