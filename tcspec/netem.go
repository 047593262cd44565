package tcspec

import (
	"time"

	"wanlab/qdisc"
)

const netemTakes = "limit PACKETS, delay TIME [JITTER [CORR]], distribution NAME, loss [random] P [CORR] | loss state P13 [P31 [P32 [P23 [P14]]]] | loss gemodel P [R [1-H [1-K]]], ecn, corrupt P [CORR], duplicate P [CORR], reorder P [CORR], gap N, rate RATE [PKTOVH [CELLSIZE [CELLOVH]]], slot MIN [MAX] | slot distribution NAME DELAY JITTER [packets N] [bytes SIZE], seed N; wanlab extensions: correlation kernel|correct, fifo_jitter, oldgap"

// builtinDists are the distributions netem resolves itself.
var builtinDists = map[string]bool{"uniform": true, "normal": true, "pareto": true, "paretonormal": true}

// maxDist is tc's MAX_DIST: the most values a .dist table may hold.
const maxDist = 16 * 1024

// netemParse holds what netem_parse_opt tracks besides the config.
type netemParse struct {
	c       qdisc.NetemConfig
	lossSet bool // tc's "opt.loss > 0 || loss_type != NETEM_LOSS_UNSPEC"
	slotSet bool
	distSet bool
}

// parseNetem follows netem_parse_opt: keywords by prefix in its order
// (limit, latency|delay, loss|drop, seed, ecn, reorder, corrupt, gap,
// duplicate, distribution, rate, slot), then its checks.
func parseNetem(a *args, opt Options) (qdisc.Spec, error) {
	p := netemParse{c: qdisc.NetemConfig{Limit: qdisc.DefaultNetemLimit}}
	c := &p.c
	for a.more() {
		w := a.take()
		var err error
		switch {
		case matches(w, "limit"):
			err = p.limit(a, w)
		case matches(w, "latency") || matches(w, "delay"):
			err = p.delay(a, w)
		case matches(w, "loss") || matches(w, "drop"):
			err = p.loss(a, w)
		case matches(w, "seed"):
			err = p.seed(a, w)
		case matches(w, "ecn"):
			c.ECN = true
		case matches(w, "reorder"):
			c.Reorder, c.ReorderCorr, err = p.probability(a, w, c.ReorderCorr)
		case matches(w, "corrupt"):
			c.Corrupt, c.CorruptCorr, err = p.probability(a, w, c.CorruptCorr)
		case matches(w, "gap"):
			err = p.gap(a, w)
		case matches(w, "duplicate"):
			c.Duplicate, c.DuplicateCorr, err = p.probability(a, w, c.DuplicateCorr)
		case matches(w, "distribution"):
			err = p.distribution(a, w, opt)
		case matches(w, "rate"):
			err = p.rate(a, w, opt)
		case matches(w, "slot"):
			err = p.slot(a, w, opt)
		case w == "correlation":
			err = p.correlation(a, w)
		case w == "fifo_jitter":
			c.FIFOJitter = true
		case w == "oldgap":
			c.OldGap = true
		default:
			err = a.unknown(w, netemTakes)
		}
		if err != nil {
			return nil, err
		}
	}
	return p.check(a)
}

func (p *netemParse) seed(a *args, w string) error {
	v, err := a.value(w, "N")
	if err != nil {
		return err
	}
	if p.c.Seed, err = getUint(v, 10, 1<<64-1); err != nil {
		return a.bad(w, v, err)
	}
	p.c.SeedSet = true
	return nil
}

func (p *netemParse) gap(a *args, w string) error {
	v, err := a.value(w, "N")
	if err != nil {
		return err
	}
	n, err := getUint(v, 0, 1<<32-1)
	if err != nil {
		return a.bad(w, v, err)
	}
	p.c.Gap = uint32(n)
	return nil
}

func (p *netemParse) distribution(a *args, w string, opt Options) error {
	v, err := a.value(w, "normal")
	if err != nil {
		return err
	}
	p.c.Dist, err = loadDist(a, w, v, opt)
	p.distSet = true
	return err
}

// correlation reads the wanlab extension "correlation kernel|correct".
func (p *netemParse) correlation(a *args, w string) error {
	v, err := a.value(w, "kernel")
	if err != nil {
		return err
	}
	switch v {
	case "kernel":
		p.c.Correlation = qdisc.CorrelationKernel
	case "correct":
		p.c.Correlation = qdisc.CorrelationCorrect
	default:
		return a.fail(v, "%q: write \"correlation kernel\" (bit-exact get_crandom) or \"correlation correct\" (the default)", w+" "+v)
	}
	return nil
}

func (p *netemParse) limit(a *args, w string) error {
	v, err := a.value(w, "1000")
	if err != nil {
		return err
	}
	n, err := getSize(v)
	if err != nil {
		return a.bad(w, v, err)
	}
	if n == 0 {
		return a.fail(v, "%q drops every packet, and wanlab reads a zero limit as the default (1000): give a limit of at least 1", w+" "+v)
	}
	p.c.Limit = int(n)
	return nil
}

// netemTime reads a netem time as get_time64 does, a bare number being ns.
// Delay and jitter (bareNS false) refuse a bare number instead: netem read
// them with get_time64 only from iproute2 9a6b231e (2024), and as µs
// before, so a bare delay means different things to different tc versions.
// Slot times have always been read with get_time64.
func netemTime(a *args, w, v string, bareNS bool) (time.Duration, error) {
	if !bareNS && bareNumber(v) {
		return 0, a.fail(v, "%q: write %sms or %sus: a bare number means ns in tc since 2024 and µs before", w+" "+v, v, v)
	}
	d, err := getTime64(v)
	if err != nil {
		return 0, a.bad(w, v, err)
	}
	if d < 0 {
		return 0, a.fail(v, "%q: netem times must not be negative", w+" "+v)
	}
	if d > qdisc.MaxNetemDelay {
		return 0, a.fail(v, "%q exceeds 2^62 ns (about 146 years), the longest time wanlab's nanosecond clock can add to another; give a shorter one", w+" "+v)
	}
	return d, nil
}

func (p *netemParse) delay(a *args, w string) error {
	start := a.i - 1
	v, err := a.value(w, "100ms")
	if err != nil {
		return err
	}
	if p.c.Delay, err = netemTime(a, w, v, false); err != nil {
		return err
	}
	if !a.nextIsNumber() {
		return nil
	}
	v = a.take()
	if p.c.Jitter, err = netemTime(a, "jitter", v, false); err != nil {
		return err
	}
	if !a.nextIsNumber() {
		return nil
	}
	v = a.take()
	if p.c.DelayCorr, err = parsePercent(v); err != nil {
		return a.badAt(start, "correlation", v, err)
	}
	return nil
}

// probability reads "P [CORR]" after reorder, corrupt or duplicate; the
// correlation keeps its old value when not given, as tc's struct does.
func (p *netemParse) probability(a *args, w string, corr float64) (float64, float64, error) {
	start := a.i - 1
	v, err := a.value(w, "1%")
	if err != nil {
		return 0, 0, err
	}
	prob, err := parsePercent(v)
	if err != nil {
		return 0, 0, a.bad(w, v, err)
	}
	if a.nextIsNumber() {
		v = a.take()
		if corr, err = parsePercent(v); err != nil {
			return 0, 0, a.badAt(start, "correlation", v, err)
		}
	}
	return prob, corr, nil
}

// percents reads up to len(dst) optional positional percentages of the
// option whose keyword is at index start.
func percents(a *args, start int, names []string, dst []*float64) error {
	for i, d := range dst {
		if !a.nextIsNumber() {
			return nil
		}
		v := a.take()
		x, err := parsePercent(v)
		if err != nil {
			return a.badAt(start, names[i], v, err)
		}
		*d = x
	}
	return nil
}

func (p *netemParse) loss(a *args, w string) error {
	if p.lossSet {
		return a.fail(w, "%q: a loss model is already given; give one loss model", w)
	}
	start := a.i - 1
	v, err := a.value(w, "1%")
	if err != nil {
		return err
	}
	l := &p.c.Loss
	switch {
	case isDigit(v[0]) || v == "random":
		if v == "random" {
			if v, err = a.value(w+" random", "1%"); err != nil {
				return err
			}
		}
		prob, err := parsePercent(v)
		if err != nil {
			return a.bad(w, v, err)
		}
		var corr float64
		if err := percents(a, start, []string{"correlation"}, []*float64{&corr}); err != nil {
			return err
		}
		if prob32(prob) != 0 {
			*l = qdisc.Loss{Kind: qdisc.LossRandom, P: prob, Corr: corr}
			p.lossSet = true
		} else {
			*l = qdisc.Loss{} // tc sends no loss at all
		}
	case v == "state":
		if v, err = a.value(w+" state", "P13"); err != nil {
			return err
		}
		p13, err := parsePercent(v)
		if err != nil {
			return a.badAt(start, "p13", v, err)
		}
		*l = qdisc.Loss{Kind: qdisc.LossState, P13: p13, P31: 1 - p13, P32: 0, P23: 1, P14: 0}
		p.lossSet = true
		return percents(a, start, []string{"p31", "p32", "p23", "p14"}, []*float64{&l.P31, &l.P32, &l.P23, &l.P14})
	case v == "gemodel":
		if v, err = a.value(w+" gemodel", "P"); err != nil {
			return err
		}
		gp, err := parsePercent(v)
		if err != nil {
			return a.badAt(start, "p", v, err)
		}
		*l = qdisc.Loss{Kind: qdisc.LossGEModel, GEP: gp, GER: 1 - gp, OneMinusH: 1, OneMinusK: 0}
		p.lossSet = true
		return percents(a, start, []string{"r", "1-h", "1-k"}, []*float64{&l.GER, &l.OneMinusH, &l.OneMinusK})
	default:
		return a.fail(v, "%q: unknown loss model %q: write \"loss 1%%\", \"loss random 1%% 25%%\", \"loss state P13 [P31 [P32 [P23 [P14]]]]\" or \"loss gemodel P [R [1-H [1-K]]]\"", w+" "+v, v)
	}
	return nil
}

// loadDist resolves a distribution name: built in, or through LoadDist.
func loadDist(a *args, w, name string, opt Options) (qdisc.Distribution, error) {
	if builtinDists[name] {
		return qdisc.Distribution{Name: name}, nil
	}
	if opt.LoadDist == nil {
		return qdisc.Distribution{}, a.fail(name, "%q: no distribution %q here: use uniform, normal, pareto or paretonormal, or let wanlab load .dist files", w+" "+name, name)
	}
	t, err := opt.LoadDist(name)
	if err != nil {
		return qdisc.Distribution{}, a.fail(name, "%q: %v", w+" "+name, err)
	}
	if len(t) == 0 || len(t) > maxDist {
		return qdisc.Distribution{}, a.fail(name, "%q: table %q holds %d values; netem takes 1 to %d", w+" "+name, name, len(t), maxDist)
	}
	return qdisc.Distribution{Name: name, Table: t}, nil
}

func (p *netemParse) rate(a *args, w string, opt Options) error {
	start := a.i - 1
	v, err := a.value(w, "10mbit")
	if err != nil {
		return err
	}
	c := &p.c
	if containsByte(v, '%') {
		c.Rate, err = getPercentRate64(v, opt.LinkSpeed)
	} else {
		c.Rate, err = getRate64(v)
	}
	if err != nil {
		return a.bad(w, v, err)
	}
	if a.nextIsSigned() {
		v = a.take()
		n, err := getInt(v, 0, -1<<31, 1<<31-1)
		if err != nil {
			return a.badAt(start, "packet overhead", v, err)
		}
		c.PacketOverhead = int32(n)
	}
	if a.nextIsNumber() {
		v = a.take()
		n, err := getUint(v, 0, 1<<32-1)
		if err != nil {
			return a.badAt(start, "cell size", v, err)
		}
		c.CellSize = uint32(n)
	}
	if a.nextIsSigned() {
		v = a.take()
		n, err := getInt(v, 0, -1<<31, 1<<31-1)
		if err != nil {
			return a.badAt(start, "cell overhead", v, err)
		}
		c.CellOverhead = int32(n)
	}
	return nil
}

func (p *netemParse) slot(a *args, w string, opt Options) error {
	if p.slotSet {
		return a.fail(w, "%q given twice: tc would merge the two; give one slot", w)
	}
	p.slotSet = true
	s := &p.c.Slot
	var err error
	if a.nextIsNumber() {
		v := a.take()
		if s.Min, err = netemTime(a, w, v, true); err != nil {
			return err
		}
		s.Max = s.Min
		if a.nextIsNumber() {
			v = a.take()
			if s.Max, err = netemTime(a, w, v, true); err != nil {
				return err
			}
			if s.Max < s.Min {
				return a.fail(v, "%q: the maximum slot delay %s is below the minimum %s: write \"slot MIN MAX\" with MIN <= MAX", w+" "+v, v, formatDuration(s.Min))
			}
		}
	} else {
		v, err := a.value(w, "MIN [MAX]")
		if err != nil {
			return err
		}
		if v != "distribution" {
			return a.fail(v, "%q: write \"slot MIN [MAX]\" or \"slot distribution NAME DELAY JITTER\"", w+" "+v)
		}
		kw := w + " distribution"
		name, err := a.value(kw, "NAME DELAY JITTER")
		if err != nil {
			return err
		}
		if s.Dist, err = loadDist(a, kw, name, opt); err != nil {
			return err
		}
		v, err = a.value(kw+" "+name, "DELAY JITTER")
		if err != nil {
			return err
		}
		if s.DistDelay, err = netemTime(a, kw+" "+name, v, true); err != nil {
			return err
		}
		v, err = a.value(kw+" "+name+" "+v, "JITTER")
		if err != nil {
			return err
		}
		if s.DistJitter, err = netemTime(a, "slot jitter", v, true); err != nil {
			return err
		}
		if s.DistJitter <= 0 {
			return a.fail(v, "%q: a distribution slot needs a positive jitter", "slot jitter "+v)
		}
	}
	if matches(a.peek(), "packets") {
		kw := a.take()
		v, err := a.value("slot "+kw, "N")
		if err != nil {
			return err
		}
		n, err := getInt(v, 0, -1<<31, 1<<31-1)
		if err != nil {
			return a.bad("slot "+kw, v, err)
		}
		if n < 0 {
			return a.fail(v, "%q: the packet budget must not be negative (0 means unlimited)", "slot "+kw+" "+v)
		}
		s.Packets = int(n)
	}
	if matches(a.peek(), "bytes") {
		kw := a.take()
		v, err := a.value("slot "+kw, "SIZE")
		if err != nil {
			return err
		}
		n, err := getSize(v)
		if err != nil {
			return a.bad("slot "+kw, v, err)
		}
		if n >= 1<<31 {
			return a.fail(v, "%q: the kernel holds the byte budget in an int: give less than 2Gb", "slot "+kw+" "+v)
		}
		s.Bytes = int(n)
	}
	return nil
}

// check applies netem_parse_opt's checks after the loop, in its order.
func (p *netemParse) check(a *args) (qdisc.Spec, error) {
	c := &p.c
	if prob32(c.Reorder) != 0 {
		if c.Delay == 0 {
			return nil, a.fail("reorder", "\"reorder %s\" without a delay: tc refuses it (\"reordering not possible without specifying some delay\"); add e.g. \"delay 10ms\"", formatPercent(c.Reorder))
		}
		if c.Gap == 0 {
			c.Gap = 1
		}
	} else if c.Gap > 0 {
		return nil, a.fail("gap", "\"gap %d\" without reorder: tc rejects it; write \"reorder 100%% gap %d\"", c.Gap, c.Gap)
	}
	if c.ECN && !p.lossSet {
		return nil, a.fail("ecn", "\"ecn\" without a loss model: tc rejects it; add e.g. \"loss 1%%\" (ecn marks the packets that loss would drop)")
	}
	if p.distSet && (c.Delay == 0 || c.Jitter == 0) {
		return nil, a.fail("distribution", "\"distribution %s\" without a delay and a jitter: tc rejects it; write e.g. \"delay 100ms 10ms distribution %s\"", c.Dist.Name, c.Dist.Name)
	}
	return *c, nil
}

func containsByte(s string, b byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == b {
			return true
		}
	}
	return false
}
