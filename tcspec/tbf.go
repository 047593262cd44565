package tcspec

import (
	"fmt"
	"strings"
	"time"

	"wanlab/qdisc"
)

const tbfTakes = "rate RATE, burst|buffer|maxburst SIZE[/CELL], limit SIZE | latency TIME, peakrate RATE, mtu|minburst SIZE[/CELL], mpu SIZE, overhead N (0-65535), linklayer ethernet|atm|adsl"

// parseTBF follows tbf_parse_opt: limit, latency, burst, peakrate, overhead
// and linklayer by prefix; buffer, maxburst, mtu, minburst, mpu and rate
// only as whole words. tc refuses a keyword given twice (with a non-zero
// value) and limit together with latency, then turns latency into a limit.
func parseTBF(a *args, _ Options) (qdisc.Spec, error) {
	var (
		c             qdisc.TBFConfig
		limit, buffer uint32
		mtu, mpu      uint32
		latency       time.Duration
		overhead      uint64
		rate, peak    qdisc.Rate
		// Zeros typed, which tc takes as the option missing.
		rateZero, burstZero, limitZero bool
	)
	for a.more() {
		w := a.take()
		var err error
		switch {
		case matches(w, "limit"):
			err = once(a, w, "SIZE", "limit", &limit, latency != 0, getSize)
			limitZero = limit == 0
		case matches(w, "latency"):
			err = once(a, w, "TIME", "latency", &latency, limit != 0, getTime)
		case matches(w, "burst") || w == "buffer" || w == "maxburst":
			err = once(a, w, "SIZE", "buffer/burst/maxburst", &buffer, false, getSizeAndCell)
			burstZero = buffer == 0
		case w == "mtu" || w == "minburst":
			err = once(a, w, "SIZE", "mtu/minburst", &mtu, false, getSizeAndCell)
		case w == "mpu":
			err = once(a, w, "SIZE", "mpu", &mpu, false, getSize)
		case w == "rate":
			err = once(a, w, "RATE", "rate", &rate, false, tbfRate)
			rateZero = rate == 0
		case matches(w, "peakrate"):
			err = once(a, w, "RATE", "peakrate", &peak, false, tbfRate)
		case matches(w, "overhead"):
			err = once(a, w, "N", "overhead", &overhead, false, func(v string) (uint64, error) { return getUint(v, 10, 1<<16-1) })
		case matches(w, "linklayer"):
			err = linkLayer(a, w, &c.Link)
		default:
			err = a.unknown(w, tbfTakes)
		}
		if err != nil {
			return nil, err
		}
	}
	// A zero that was typed is tc's "missing", but say what was typed.
	for _, z := range []struct {
		kw   string
		zero bool
		fix  string
	}{
		{"rate", rateZero, "a positive rate, e.g. rate 10mbit"},
		{"burst", burstZero, "a positive burst of at least one MTU, e.g. burst 32k"},
		{"limit", limitZero && latency == 0, "a positive limit, or a latency, e.g. latency 50ms"},
	} {
		if z.zero {
			return nil, a.fail(z.kw, "\"%s 0\": tbf cannot work with a zero %s (tc takes it as missing); give %s", z.kw, z.kw, z.fix)
		}
	}
	// tc reports every missing parameter at once.
	var missing []string
	if rate == 0 {
		missing = append(missing, "the \"rate\" parameter is mandatory: add e.g. \"rate 10mbit\"")
	}
	if buffer == 0 {
		missing = append(missing, "the \"burst\" parameter is mandatory: add e.g. \"burst 32k\" (at least one MTU)")
	}
	if peak != 0 && mtu == 0 {
		missing = append(missing, "when \"peakrate\" is specified, \"mtu\" must also be specified: add e.g. \"mtu 1514\"")
	}
	if limit == 0 && latency == 0 {
		missing = append(missing, "either \"limit\" or \"latency\" is required: add e.g. \"latency 50ms\"")
	}
	if len(missing) > 0 {
		return nil, a.fail("", "%s", strings.Join(missing, "; "))
	}

	if limit == 0 {
		// tc's arithmetic, in doubles, truncated to a u32.
		us := float64(latency / time.Microsecond)
		lim := float64(rate)*us/1e6 + float64(buffer)
		if peak != 0 {
			if lim2 := float64(peak)*us/1e6 + float64(mtu); lim2 < lim {
				lim = lim2
			}
		}
		if lim >= 1<<32 {
			return nil, a.fail("latency", "\"latency %s\" at this rate makes a limit above 4Gb: give a smaller latency or an explicit limit", formatDuration(latency))
		}
		limit = uint32(lim)
	}
	c.Rate, c.Burst, c.Limit = rate, int(buffer), int(limit)
	c.PeakRate, c.MTU, c.MPU, c.Overhead = peak, int(mtu), int(mpu), int(overhead)
	return c, nil
}

// once reads the value of keyword w into *dst with parse, as
// tbf_parse_opt reads each option: what describes a missing value, and tc
// refuses the option once *dst holds a value (name is how it names the
// keyword then) and, when limitAndLatency, because limit and latency
// exclude each other.
func once[T comparable](a *args, w, what, name string, dst *T, limitAndLatency bool, parse func(string) (T, error)) error {
	v, err := a.value(w, what)
	if err != nil {
		return err
	}
	var zero T
	if *dst != zero {
		return a.dup(name)
	}
	if limitAndLatency {
		return a.fail(w, "\"limit\" and \"latency\" together: tc refuses both; give one (latency is turned into a limit)")
	}
	if *dst, err = parse(v); err != nil {
		return a.bad(w, v, err)
	}
	return nil
}

// linkLayer reads tbf's linklayer, by prefix.
func linkLayer(a *args, w string, dst *qdisc.LinkLayer) error {
	v, err := a.value(w, "ethernet")
	if err != nil {
		return err
	}
	switch {
	case matches(v, "ethernet"):
		*dst = qdisc.LinkEthernet
	case matches(v, "atm"), matches(v, "adsl"):
		*dst = qdisc.LinkATM
	default:
		return a.fail(v, "%q: unknown link layer: write ethernet, atm or adsl", w+" "+v)
	}
	return nil
}

// tbfRate reads tbf's rate and peakrate, which tc takes in absolute units
// only.
func tbfRate(v string) (qdisc.Rate, error) {
	if containsByte(v, '%') {
		return 0, fmt.Errorf("bad rate %q: tc's tbf takes no percentages: give an absolute rate such as 10mbit", v)
	}
	return getRate64(v)
}

// formatTBF prints tbf with its limit in bytes (latency is not kept).
func formatTBF(c qdisc.TBFConfig) string {
	var b words
	b.add("tbf", "rate", formatRate(c.Rate), "burst", formatSize(c.Burst), "limit", formatSize(c.Limit))
	b.rate("peakrate", c.PeakRate)
	b.size("mtu", c.MTU)
	b.size("mpu", c.MPU)
	b.count("overhead", c.Overhead)
	if c.Link == qdisc.LinkATM {
		b.add("linklayer", "atm")
	}
	return b.String()
}
