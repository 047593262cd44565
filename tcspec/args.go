package tcspec

import (
	"fmt"
	"strings"
	"time"

	"wanlab/qdisc"
)

// args walks the option words of one qdisc, as tc's argc/argv loops do.
type args struct {
	kind  string
	words []string
	i     int
}

func (a *args) more() bool { return a.i < len(a.words) }

// take returns the next word and moves past it.
func (a *args) take() string {
	w := a.words[a.i]
	a.i++
	return w
}

// peek returns the next word without moving, or "" at the end.
func (a *args) peek() string {
	if a.i < len(a.words) {
		return a.words[a.i]
	}
	return ""
}

// nextIsNumber is netem's NEXT_IS_NUMBER: an optional positional value is
// taken only if the next word starts with a digit.
func (a *args) nextIsNumber() bool {
	w := a.peek()
	return w != "" && isDigit(w[0])
}

// nextIsSigned is NEXT_IS_SIGNED_NUMBER: a digit or a minus sign.
func (a *args) nextIsSigned() bool {
	w := a.peek()
	return w != "" && (isDigit(w[0]) || w[0] == '-')
}

// value is NEXT_ARG: the value that keyword kw requires. what describes it
// for the error when it is missing.
func (a *args) value(kw, what string) (string, error) {
	if !a.more() {
		return "", failf(a.kind, kw, "%q needs a value: write %q", kw, kw+" "+what)
	}
	return a.take(), nil
}

// uint reads the value keyword kw requires as an unsigned integer in base
// (getUint), at most max; what describes it for the error when it is
// missing.
func (a *args) uint(kw, what string, base int, max uint64) (uint64, error) {
	v, err := a.value(kw, what)
	if err != nil {
		return 0, err
	}
	n, err := getUint(v, base, max)
	if err != nil {
		return 0, a.bad(kw, v, err)
	}
	return n, nil
}

// size reads the value keyword kw requires as a size in bytes (get_size);
// what describes it for the error when it is missing.
func (a *args) size(kw, what string) (uint32, error) {
	v, err := a.value(kw, what)
	if err != nil {
		return 0, err
	}
	n, err := getSize(v)
	if err != nil {
		return 0, a.bad(kw, v, err)
	}
	return n, nil
}

// bad wraps a unit reader's complaint about the value v of keyword kw.
func (a *args) bad(kw, v string, err error) error {
	return failf(a.kind, v, "%q: %v", kw+" "+v, err)
}

// badAt reports v, the part named what of the option whose keyword is at
// index start, quoting the option as it was typed:
// "loss 1% 200%": correlation: bad percentage "200%": ...
func (a *args) badAt(start int, what, v string, err error) error {
	return failf(a.kind, v, "%q: %s: %v", strings.Join(a.words[start:a.i], " "), what, err)
}

// fail reports a problem with token.
func (a *args) fail(token, format string, v ...any) error {
	return failf(a.kind, token, format, v...)
}

// unknown reports a word that is no option of this qdisc.
func (a *args) unknown(w, takes string) error {
	if w == "help" {
		return a.fail(w, "%s takes: %s", a.kind, takes)
	}
	return a.fail(w, "%q is not a %s option; %s takes: %s", w, a.kind, a.kind, takes)
}

// dup reports a keyword that tc refuses to see twice.
func (a *args) dup(kw string) error {
	return a.fail(kw, "%q given twice: give it once", kw)
}

// words builds a command line word by word.
type words struct{ w []string }

func (b *words) add(w ...string) { b.w = append(b.w, w...) }

// The options below are written, as tc would take them back, only when
// their value is not the zero that leaves them out.

// count adds "kw N".
func (b *words) count(kw string, n int) {
	if n != 0 {
		b.add(kw, fmt.Sprint(n))
	}
}

// time adds "kw TIME".
func (b *words) time(kw string, d time.Duration) {
	if d != 0 {
		b.add(kw, formatDuration(d))
	}
}

// size adds "kw SIZE".
func (b *words) size(kw string, n int) {
	if n != 0 {
		b.add(kw, formatSize(n))
	}
}

// rate adds "kw RATE".
func (b *words) rate(kw string, r qdisc.Rate) {
	if r != 0 {
		b.add(kw, formatRate(r))
	}
}

// flag adds the keyword kw alone when on.
func (b *words) flag(kw string, on bool) {
	if on {
		b.add(kw)
	}
}

func (b *words) String() string { return strings.Join(b.w, " ") }
