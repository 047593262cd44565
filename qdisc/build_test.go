package qdisc

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestKinds(t *testing.T) {
	want := []string{"bfifo", "cake", "codel", "dualpi2", "fq_codel", "fq_pie", "htb", "netem", "pfifo", "pfifo_fast", "pfifo_head_drop", "pie", "prio", "red", "sfq", "tbf"}
	if got := Kinds(); !slices.Equal(got, want) {
		t.Errorf("Kinds() = %v, want %v", got, want)
	}
	for k, row := range kinds {
		if row.classful != (k == "netem" || k == "tbf" || k == "red") {
			t.Errorf("%s: classful %v", k, row.classful)
		}
		if row.classes != (k == "htb" || k == "prio") {
			t.Errorf("%s: classes %v", k, row.classes)
		}
	}
}

// Configurations are values: a pointer is refused with an error, never a
// panic, and an unknown or missing one is named.
func TestBuildRefusesOtherTypes(t *testing.T) {
	for _, tc := range []struct {
		chain []Spec
		want  string
	}{
		{[]Spec{&NetemConfig{Delay: time.Millisecond}}, "*qdisc.NetemConfig"},
		{[]Spec{NetemConfig{}, &TBFConfig{Rate: 1, Burst: 1, Limit: 1}}, "*qdisc.TBFConfig"},
		{[]Spec{NetemConfig{}, nil}, "qdisc 2 of the chain is missing"},
		{[]Spec{fakeSpec{}}, `unknown qdisc "choke"`},
		{nil, "empty chain"},
	} {
		q, err := Build(tc.chain, &Env{})
		if err == nil || q != nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Build(%#v) = %v, %v; want an error naming %q", tc.chain, q, err, tc.want)
		}
	}
	if w := Warnings(&TBFConfig{Burst: 1}, nil); w != nil {
		t.Errorf("Warnings of a pointer: %q", w)
	}
}

type fakeSpec struct{}

func (fakeSpec) Kind() string { return "choke" }
