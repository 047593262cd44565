package catalog

import (
	"fmt"
	"slices"
	"testing"
)

// The DSCP names are RFC 2474's class selectors, RFC 2597's AF classes,
// RFC 3246's EF and BE, in any case; DSCPNames says exactly which.
func TestDSCP(t *testing.T) {
	for name, want := range map[string]uint8{
		"BE": 0, "be": 0, "CS0": 0, "cs1": 8, "CS5": 40, "CS7": 56,
		"AF11": 10, "af12": 12, "AF21": 18, "AF33": 30, "af43": 38, "EF": 46, "ef": 46,
	} {
		if got, ok := DSCP(name); !ok || got != want {
			t.Errorf("DSCP(%q) = %d, %v; want %d", name, got, ok, want)
		}
	}
	for _, bad := range []string{"", "CS8", "AF14", "AF51", "AF1", "EF1", "0xb8", "46", "BK"} {
		if d, ok := DSCP(bad); ok {
			t.Errorf("DSCP(%q) = %d, want no such name", bad, d)
		}
	}
	// DSCPNames, "BE, CS0-CS7, AF11-AF43, EF", spelled out, is the table.
	names := []string{"BE", "EF"}
	for i := range 8 {
		names = append(names, fmt.Sprintf("CS%d", i))
	}
	for x := 1; x <= 4; x++ {
		for y := 1; y <= 3; y++ {
			names = append(names, fmt.Sprintf("AF%d%d", x, y))
		}
	}
	var table []string
	for name := range dscps {
		table = append(table, name)
	}
	slices.Sort(names)
	slices.Sort(table)
	if !slices.Equal(names, table) {
		t.Errorf("the table has %v, DSCPNames says %q", table, DSCPNames)
	}
}

// Every mark a test uses is a name of the table.
func TestMarksAreDSCPNames(t *testing.T) {
	for _, m := range []Mark{BE, BK, CS5, EF} {
		if _, ok := DSCP(string(m)); !ok {
			t.Errorf("mark %q is not a DSCP name", m)
		}
	}
}
