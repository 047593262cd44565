package testrun

import (
	"errors"
	"strings"
	"testing"
)

func keyOf(err error) string {
	var bad *BadOption
	if errors.As(err, &bad) {
		return bad.Key
	}
	return "(not a *BadOption)"
}

// A value an option's type cannot take is refused by the option's own
// parser, the same for the flag and the experiment file, naming the option,
// the value and what to give; a given zero that Options cannot tell from
// "not given" is refused naming the fix.
func TestOptionParsers(t *testing.T) {
	for _, c := range []struct{ key, value, want string }{
		{"streams", "x", `--streams "x": give a whole number`},
		{"streams", "99999999999999999999", `--streams "99999999999999999999" is out of range: give a whole number that fits`},
		{"seed", "-1", `--seed "-1": give a whole number from 0 up`},
		{"ipv6", "maybe", `--ipv6 "maybe": give true or false`},
		{"duration", "ten", `--duration "ten" is not a duration: write e.g. 30s, 500ms or 2m`},
		{"tx_qlen", "five", `--tx-qlen "five": give a whole number`},
		{"at", "soon", `--at "soon" is not a duration: write the time into the run, e.g. --at 20s`},
		{"up", " ", "--up: empty chain: give qdiscs in tc syntax"},
	} {
		o := Defaults()
		err := LookupOption(c.key).Set(&o, c.value)
		var bad *BadOption
		if !errors.As(err, &bad) || bad.Key != c.key || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s %q: %v (key %q); want %q", c.key, c.value, err, keyOf(err), c.want)
		}
	}
	o := Defaults()
	for _, op := range Registry() {
		if op.ZeroFix == "" {
			continue
		}
		if err := CheckGiven(o, func(f string) bool { return f == op.Flag }); !IsBadOption(err) || !strings.Contains(err.Error(), op.ZeroFix) {
			t.Errorf("%s given its zero value: %v; want its fix %q", op.Name(), err, op.ZeroFix)
		}
	}
	// Repeatable options add; the others take the last value.
	for _, v := range []string{"net.ipv4.tcp_sack=0", "net.ipv4.tcp_dsack=0"} {
		LookupOption("sysctls").Set(&o, v)
	}
	if got := LookupOption("sysctls").Texts(&o); len(got) != 2 {
		t.Errorf("two --sysctl give %q", got)
	}
}
