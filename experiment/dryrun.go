package experiment

import (
	"fmt"
	"io"
	"strings"
	"time"

	"wanlab/internal/errwriter"
)

// WriteDryRun prints what Execute would run for shard s: every case with
// its variables and its chains in tc syntax, each test with its options,
// and each run's seed and results file. The backend, when not nil, gives
// the total time.
func (p *Plan) WriteDryRun(w io.Writer, s Shard, b Backend) error {
	ew := errwriter.New(w)
	runs := p.Runs(s)
	var total time.Duration
	if b != nil {
		total = p.Duration(s, b)
	}
	quick := ""
	if p.Quick {
		quick = ", quick"
	}
	ew.Linef("experiment %s (%s, sha256 %.12s%s): %s, %s, %s: %s",
		p.Name, p.FileName, p.SHA256, quick, plural(len(p.Cases), "case"), plural(p.Tests, "test"), plural(p.Repeat, "repetition"),
		plural(len(p.Cases)*p.Tests*p.Repeat, "run"))
	if !s.Whole() {
		n := 0
		for _, c := range p.Cases {
			if s.Contains(c.Number) {
				n++
			}
		}
		ew.Linef("shard %s: %s, %s", s, plural(n, "case"), plural(len(runs), "run"))
	}
	if p.Quick {
		ew.Linef("quick: each run shortened to a few seconds, whatever its options say")
	}
	if b != nil {
		ew.Linef("time: about %s of runs", roundDuration(total))
	}
	if p.Shuffle {
		ew.Linef("order: shuffled (shuffle seed %d)", p.ShuffleSeed)
	} else {
		ew.Linef("order: each repetition of every case in turn")
	}
	for _, c := range p.Cases {
		if !s.Contains(c.Number) {
			continue
		}
		ew.Linef("")
		ew.Linef("case %d of %d: %s", c.Number, len(p.Cases), c.Label())
		if len(c.Bound) > 0 {
			ew.Linef("  bound: %s", varsLabel(c.Bound))
		}
		ew.Linef("  up:   %s", chainOrDirect(c.UpTC))
		ew.Linef("  down: %s", chainOrDirect(c.DownTC))
		for _, r := range c.Runs {
			if r.Repetition != 1 {
				continue
			}
			ew.Linef("  %s%s", r.Test, formatOptions(r.Options))
			for _, rr := range c.Runs {
				if rr.TestIndex == r.TestIndex {
					ew.Linef("    #%d seed %d -> %s", rr.Repetition, rr.Seed, rr.File)
				}
			}
		}
	}
	return ew.Err()
}

// Duration is how long the runs of shard s take one after another, by the
// backend's estimates, with the pauses between them: what the dry run
// prints, and what a batch job running the shard asks its scheduler for
// (with a margin: setting up each run's testbed adds a second or two).
func (p *Plan) Duration(s Shard, b Backend) time.Duration {
	runs := p.Runs(s)
	var total time.Duration
	for _, d := range estimates(b, runs) {
		total += d
	}
	if len(runs) > 1 {
		total += time.Duration(len(runs)-1) * p.Pause
	}
	return total
}

func chainOrDirect(tc string) string {
	if tc == "" {
		return "(no qdisc)"
	}
	return tc
}

// formatOptions prints options as " key=value key=[a, b]".
func formatOptions(opts []Option) string {
	var b strings.Builder
	for _, o := range opts {
		b.WriteString(" " + o.Key + "=")
		v := strings.Join(o.Values, ", ")
		if len(o.Values) != 1 {
			v = "[" + v + "]"
		} else if strings.ContainsAny(v, " \t") {
			v = fmt.Sprintf("%q", v)
		}
		b.WriteString(v)
	}
	return b.String()
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
