package main

import (
	"regexp"
	"strings"
	"testing"

	"wanlab/internal/tccases"
)

// statsNumber matches the counters of tc's statistics lines, which
// depend on what crossed the testbed (with a time's or a size's unit and
// a probability's exponent); the rest of each line must be tc's.
var statsNumber = regexp.MustCompile(`[0-9][0-9.]*(e-[0-9]+|us|ms|s|b|Kb|Mb)?`)

// normaliseStats replaces the numbers of every line but the qdisc lines
// (the counters and the extended statistics) with N.
// normaliseStats also leaves out empty lines, which the table cannot hold
// (its cases end at one) and tc prints around cake's tin table.
func normaliseStats(lines []string) []string {
	var out []string
	for _, l := range lines {
		if l == "" {
			continue
		}
		if !strings.HasPrefix(l, "qdisc ") {
			l = statsNumber.ReplaceAllString(l, "N")
		}
		out = append(out, l)
	}
	return out
}

// tcBlock returns the lines `wanlab status` printed for one direction's
// qdiscs: those after the direction's title up to its own figures.
func tcBlock(status, title string) ([]string, bool) {
	lines := strings.Split(status, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, title+": ") {
			continue
		}
		var block []string
		for _, b := range lines[i+1:] {
			if strings.HasPrefix(b, " delivered ") {
				return block, true
			}
			block = append(block, b)
		}
	}
	return nil, false
}

// TestCLIStatusPrintsWhatTCPrints runs every case of the project's table of
// tc output through `wanlab up` and `wanlab status`: each direction's
// qdisc lines must be what Linux's tc printed for the same commands,
// extended statistics included, the counters' values aside. Two cases
// share a testbed, one per direction.
func TestCLIStatusPrintsWhatTCPrints(t *testing.T) {
	wanlabBin(t)
	cases, err := tccases.Parse(tccases.Linux61)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(cases); i += 2 {
		pair := cases[i:min(i+2, len(cases))]
		name := uniqueName()
		args := []string{"--up", pair[0].Chain()}
		if len(pair) > 1 {
			args = append(args, "--down", pair[1].Chain())
		}
		upDetached(t, name, args...)
		out := mustCLI(t, "status", name)
		for j, c := range pair {
			title := []string{"up (client → server)", "down (server → client)"}[j]
			got, ok := tcBlock(out, title)
			if !ok {
				t.Errorf("line %d: %s: status has no %q block:\n%s", c.Line, c.Chain(), title, out)
				continue
			}
			want := c.Output
			same := strings.Join(normaliseStats(got), "\n") == strings.Join(normaliseStats(want), "\n")
			switch {
			case c.Differs != "" && same:
				t.Errorf("line %d: %s: the table says wanlab differs (%s), but status prints what tc did: drop the differs line", c.Line, c.Chain(), c.Differs)
			case c.Differs == "" && !same:
				t.Errorf("line %d: %s (%s):\n got %q\nwant %q", c.Line, c.Chain(), title, got, want)
			}
		}
		cli(t, "down", name)
	}
}
