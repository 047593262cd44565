// Package tccases is the project's table of what Linux's tc prints for
// the qdiscs wanlab emulates: commands, and the output of a real
// `tc -s qdisc show` for them, captured on Linux 6.1 with iproute2 6.1.
// The tests of tcspec's printer and of `wanlab status` check wanlab's
// output against it.
package tccases

import (
	_ "embed"
	"fmt"
	"strings"
)

// Linux61 is the table captured on Debian's Linux 6.1 with iproute2 6.1.0,
// on a single-queue veth device (refcnt 2) with txqueuelen 1000 and MTU
// 1500, HZ 250. See the file's header for how it was captured.
//
//go:embed linux-6.1.txt
var Linux61 string

// Case is one entry of a table of what Linux's tc printed: the
// commands that built a device's qdiscs and the output of
// `tc -s qdisc show` for that device.
type Case struct {
	// Line is the case's first line in the table (1-based), for messages.
	Line int
	// Commands are the "tc qdisc add dev DEV ..." lines, root first.
	Commands []string
	// Differs, when not empty, says why wanlab's output is known to
	// differ from tc's for this case.
	Differs string
	// Output is what tc printed, line by line, trailing spaces kept.
	Output []string
}

// Chain returns the case's commands as one chain for tcspec.ParseChain.
func (c Case) Chain() string { return strings.Join(c.Commands, "; ") }

// Parse reads a table of tc-show cases. Lines starting with "#"
// outside a case are comments; a case is one or more lines "tc qdisc add
// ...", optionally a line "differs: REASON", then the lines tc printed,
// and ends at a blank line or at the end.
func Parse(text string) ([]Case, error) {
	var cases []Case
	var cur *Case
	end := func() {
		if cur != nil {
			cases = append(cases, *cur)
			cur = nil
		}
	}
	for i, line := range strings.Split(text, "\n") {
		n := i + 1
		switch {
		case strings.TrimSpace(line) == "":
			end()
		case cur == nil && strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "tc qdisc add "):
			if cur == nil {
				cur = &Case{Line: n}
			} else if len(cur.Output) > 0 || cur.Differs != "" {
				return nil, fmt.Errorf("line %d: a command after the output of the case at line %d: separate cases with a blank line", n, cur.Line)
			}
			cur.Commands = append(cur.Commands, line)
		case cur == nil:
			return nil, fmt.Errorf("line %d: %q outside a case: a case starts with \"tc qdisc add\"", n, line)
		case strings.HasPrefix(line, "differs: "):
			cur.Differs = strings.TrimPrefix(line, "differs: ")
		default:
			cur.Output = append(cur.Output, line)
		}
	}
	end()
	return cases, nil
}
