package testrun

// How an option of the registry reads its text into Options, says it back,
// and tells a value given from the default.

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"wanlab/catalog"
)

// Name is how messages name the option: its flag ("--cc"), or "test".
func (op *Option) Name() string {
	if op.Flag == "" {
		return op.Key
	}
	return "--" + op.Flag
}

// Type names the option's value as pflag does in help: "duration", "int",
// "uint64", "bool", "string", "stringArray" (repeatable), "chain", or a
// per-stream list: "strings" or "seconds" (whole seconds).
func (op *Option) Type() string { return op.field.typ() }

// Repeatable reports whether the option may be given more than once, each
// value adding to the others (--sysctl, --at).
func (op *Option) Repeatable() bool { return op.field.repeatable() }

// Usage is the flag's help: Help and, when there is one, the default.
func (op *Option) Usage() string {
	if op.Default == "" {
		return op.Help
	}
	return fmt.Sprintf("%s (default %s)", op.Help, op.Default)
}

// Set parses text as the option's value and sets it in o: the one parser
// of the flag and of the experiment file's value. A repeatable option adds
// the value to those given before. The error is a *BadOption naming the
// option, the value and what to give.
func (op *Option) Set(o *Options, text string) error {
	err := op.field.set(o, text)
	if err == nil {
		return nil
	}
	var bv badValue
	if errors.As(err, &bv) {
		return bad(op.Key, "%s %q%s", op.Name(), text, string(bv))
	}
	return bad(op.Key, "%v", err)
}

// Texts returns the option's value in o as text, each value of a
// repeatable option apart; none for an option that is not set and has no
// value of its own (--tx-qlen). Set takes each back. The chains of a
// change are the path flags' that follow its --at, which this cannot say:
// --at's texts are the changes' times, the path flags' the run's start.
func (op *Option) Texts(o *Options) []string { return op.field.texts(o) }

// inUse reports whether o asks for something with the option: its value is
// not the default.
func (op *Option) inUse(o *Options) bool {
	d := Defaults()
	return !slices.Equal(op.field.texts(o), op.field.texts(&d))
}

// zero reports whether the option holds its field's zero value, which
// Options cannot tell from "not given".
func (op *Option) zero(o *Options) bool {
	return slices.Equal(op.field.texts(o), op.field.texts(&Options{}))
}

// notApplying refuses the first option that in(op) says o asks for and that
// does nothing in a run of test t.
func notApplying(t catalog.Test, o *Options, in func(op *Option) bool) error {
	for _, op := range registry {
		if op.NotFor == nil || !in(op) {
			continue
		}
		if why := op.NotFor(t, o); why != "" {
			return &BadOption{Key: op.Key, msg: why}
		}
	}
	return nil
}

// value is how an option's value lives in Options: its field, its type.
type value interface {
	// typ is the type's name in help (Option.Type).
	typ() string
	// set parses text into the field; a badValue error is the type's
	// refusal, any other the whole message.
	set(o *Options, text string) error
	// texts is the field as text: equal texts are equal values.
	texts(o *Options) []string
	// repeatable says that each value given adds to the others.
	repeatable() bool
}

// badValue is text a value's type cannot take: what follows the option and
// the value in the message (`: give a whole number`).
type badValue string

func (b badValue) Error() string { return string(b) }

// kind is a type of value: its name in help, its parser and its printer.
type kind[T any] struct {
	name   string
	parse  func(string) (T, error)
	format func(T) string
}

func (k kind[T]) typ() string      { return k.name }
func (k kind[T]) repeatable() bool { return false }

// The kinds of the options' values.
var (
	textKind     = kind[string]{"string", func(s string) (string, error) { return s, nil }, func(s string) string { return s }}
	intKind      = kind[int]{"int", parseInt, strconv.Itoa}
	uintKind     = kind[uint64]{"uint64", parseUint, func(n uint64) string { return strconv.FormatUint(n, 10) }}
	boolKind     = kind[bool]{"bool", parseBool, strconv.FormatBool}
	durationKind = kind[time.Duration]{"duration", parseDuration, time.Duration.String}
)

// scalar is a field that holds one value.
type scalar[T any] struct {
	kind[T]
	field func(*Options) *T
}

func (s scalar[T]) set(o *Options, text string) error {
	v, err := s.parse(text)
	if err == nil {
		*s.field(o) = v
	}
	return err
}
func (s scalar[T]) texts(o *Options) []string { return []string{s.format(*s.field(o))} }

// optional is a field that is nil until given: the option's default
// depends on the run (--duration, --tx-qlen).
type optional[T any] struct {
	kind[T]
	field func(*Options) **T
}

func (s optional[T]) set(o *Options, text string) error {
	v, err := s.parse(text)
	if err == nil {
		*s.field(o) = &v
	}
	return err
}
func (s optional[T]) texts(o *Options) []string {
	if p := *s.field(o); p != nil {
		return []string{s.format(*p)}
	}
	return nil
}

// list is a repeatable option: each value given adds to the others.
type list struct{ field func(*Options) *[]string }

func (l list) typ() string      { return "stringArray" }
func (l list) repeatable() bool { return true }
func (l list) set(o *Options, text string) error {
	*l.field(o) = append(*l.field(o), text)
	return nil
}
func (l list) texts(o *Options) []string { return slices.Clone(*l.field(o)) }

// The values of the registry's entries, by the type of their field: text
// (string), whole (int), wholeOrNil (*int), natural (uint64), boolean,
// length (time.Duration) and lengthOrNil (*time.Duration); list, chain and
// changeAt are the repeatable options' and the path's.

func text(f func(*Options) *string) value          { return scalar[string]{textKind, f} }
func whole(f func(*Options) *int) value            { return scalar[int]{intKind, f} }
func wholeOrNil(f func(*Options) **int) value      { return optional[int]{intKind, f} }
func natural(f func(*Options) *uint64) value       { return scalar[uint64]{uintKind, f} }
func boolean(f func(*Options) *bool) value         { return scalar[bool]{boolKind, f} }
func length(f func(*Options) *time.Duration) value { return scalar[time.Duration]{durationKind, f} }
func lengthOrNil(f func(*Options) **time.Duration) value {
	return optional[time.Duration]{durationKind, f}
}

func parseInt(s string) (int, error) {
	n, err := strconv.ParseInt(s, 0, strconv.IntSize)
	return int(n), numberError(err, "a whole number")
}

func parseUint(s string) (uint64, error) {
	n, err := strconv.ParseUint(s, 0, 64)
	return n, numberError(err, "a whole number from 0 up")
}

// numberError is strconv's error as the fix: want is what to give.
func numberError(err error, want string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, strconv.ErrRange):
		return badValue(" is out of range: give " + want + " that fits")
	}
	return badValue(": give " + want)
}

func parseBool(s string) (bool, error) {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, badValue(": give true or false")
	}
	return b, nil
}

func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, badValue(" is not a duration: write e.g. 30s, 500ms or 2m")
	}
	return d, nil
}

// chain is --up, --down or --both: before any --at, the run's path; after
// one, that change's (pflag sets flags in command-line order, and so does
// an experiment).
type chain struct{ dir string }

func (c chain) typ() string      { return "chain" }
func (c chain) repeatable() bool { return false }

// of picks, of a start's or a change's three chains, the one of c.
func (c chain) of(up, down, both *string) *string {
	return map[string]*string{"up": up, "down": down, "both": both}[c.dir]
}

func (c chain) set(o *Options, text string) error {
	dst := c.of(&o.Up, &o.Down, &o.Both)
	if n := len(o.At); n > 0 {
		ch := &o.At[n-1]
		if dst = c.of(&ch.Up, &ch.Down, &ch.Both); *dst != "" {
			return fmt.Errorf("--at %v takes one --%s; give another --at for a later change", ch.At, c.dir)
		}
	}
	if strings.TrimSpace(text) == "" {
		return fmt.Errorf("--%s: empty chain: give qdiscs in tc syntax, e.g. \"netem delay 20ms\"", c.dir)
	}
	*dst = text
	return nil
}

// texts is the path's start; the changes are --at's.
func (c chain) texts(o *Options) []string { return []string{*c.of(&o.Up, &o.Down, &o.Both)} }

// changeAt is --at: it starts a change that the chains after it fill.
type changeAt struct{}

func (changeAt) typ() string      { return "duration" }
func (changeAt) repeatable() bool { return true }
func (changeAt) set(o *Options, text string) error {
	d, err := time.ParseDuration(text)
	if err != nil {
		return fmt.Errorf("--at %q is not a duration: write the time into the run, e.g. --at 20s", text)
	}
	o.At = append(o.At, Change{At: d})
	return nil
}
func (changeAt) texts(o *Options) []string {
	t := make([]string, len(o.At))
	for i, c := range o.At {
		t[i] = c.At.String()
	}
	return t
}

// tokens is a per-stream list of Flent's (--markings): one value whose
// entries are split on "," and ";", empty entries dropped, as Flent's
// token_split reads a test parameter. Flent's split is shlex's, which
// also reads quotes, backslashes and "#" (a comment): an entry holding
// one is refused, so that Flent reads the recorded parameter as the run
// took it.
type tokens[T any] struct {
	kind[T]
	field func(*Options) *[]T
}

func (l tokens[T]) set(o *Options, text string) error {
	var vs []T
	for _, e := range strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == ';' }) {
		if strings.ContainsAny(e, `"'\#`) {
			return badValue(fmt.Sprintf(": entry %q holds a quote, a backslash or #, which Flent's parser reads as quoting or a comment: drop it", e))
		}
		v, err := l.parse(e)
		if err != nil {
			var bv badValue
			if errors.As(err, &bv) {
				return badValue(fmt.Sprintf(": entry %q%s", e, string(bv)))
			}
			return err
		}
		vs = append(vs, v)
	}
	*l.field(o) = vs
	return nil
}

// texts is the list as one text, its entries joined by ",": none when
// there are none.
func (l tokens[T]) texts(o *Options) []string {
	vs := *l.field(o)
	if len(vs) == 0 {
		return nil
	}
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = l.format(v)
	}
	return []string{strings.Join(parts, ",")}
}

// The kinds of the entries of per-stream lists: text, and whole seconds
// (Flent's stream_delays, which it reads with int()).
var (
	textsKind   = kind[string]{"strings", textKind.parse, textKind.format}
	secondsKind = kind[time.Duration]{"seconds", parseSeconds, func(d time.Duration) string { return strconv.FormatInt(int64(d/time.Second), 10) }}
)

func texts(f func(*Options) *[]string) value { return tokens[string]{textsKind, f} }
func seconds(f func(*Options) *[]time.Duration) value {
	return tokens[time.Duration]{secondsKind, f}
}

func parseSeconds(s string) (time.Duration, error) {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, numberError(err, "whole seconds (Flent reads each with int()), e.g. 0,5,10")
	}
	if n < 0 {
		return 0, badValue(": give 0 or more seconds: a stream starts with the load (0) or later")
	}
	return time.Duration(n) * time.Second, nil
}
