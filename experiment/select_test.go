package experiment

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestSelect(t *testing.T) {
	dir := runTableSweep(t, tableSweep)
	rs, err := OpenRuns(dir, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	all, varying, err := rs.Select(nil)
	if err != nil {
		t.Fatal(err)
	}
	// 5 delays × 3 transports × 2 variants × 3 repetitions; the test
	// follows the transport, so it is no dimension of its own.
	if len(all) != 90 || !slices.Equal(varying, []string{"delay", "transport", "variant"}) {
		t.Fatalf("%d runs varying in %q", len(all), varying)
	}
	runs, varying, err := rs.Select(map[string][]string{"variant": {"jitter"}, "transport": {"reno,cubic"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 30 || !slices.Equal(varying, []string{"delay", "transport"}) {
		t.Fatalf("%d runs varying in %q", len(runs), varying)
	}
	for _, r := range runs {
		if r.Dims["variant"] != "jitter" || r.Dims["transport"] == "udp" || r.Dims["test"] != "tcp_upload" || r.Result == nil || r.Result.Status != StatusComplete {
			t.Errorf("run %s: %v, %+v", r.Run.File, r.Dims, r.Result)
		}
	}
	if l := runs[0].Label(varying); l != "delay=10ms transport=reno" {
		t.Errorf("label %q", l)
	}
	if v := runs[0].Values(varying); !slices.Equal(v, []string{"10ms", "reno"}) {
		t.Errorf("values %q", v)
	}
	if runs, varying, _ := rs.Select(map[string][]string{"test": {"udp_flood"}}); len(runs) != 30 || !slices.Equal(varying, []string{"delay", "variant"}) {
		t.Errorf("--where test=udp_flood: %d runs varying in %q", len(runs), varying)
	}
	for _, c := range []struct {
		where map[string][]string
		want  string
	}{
		{map[string][]string{"speed": {"1"}}, "speed is not a variable of " + dir + " (its variables are delay, transport, variant, test)"},
		{map[string][]string{"delay": {"20ms"}}, `delay has no value "20ms" (its values are 10ms, 30ms, 50ms, 70ms, 100ms)`},
	} {
		_, _, err := rs.Select(c.where)
		var ce *ChoiceError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Select(%v): %v; want a ChoiceError saying %q", c.where, err, c.want)
		}
	}
}
