package experiment

import (
	"strings"
	"testing"
)

func TestParseReference(t *testing.T) {
	ref, err := ParseReference("e1.csv", []byte(`# seed 001
delay,transport,series,stat,value,source
10ms,reno,,mean,93.9,"seed 001, table 1"
10ms,cubic,TCP upload,median,94.2,seed 001
# a comment between rows
30ms,reno,,mean,81.5,seed 001
`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(ref.Vars, ",") != "delay,transport" || len(ref.Rows) != 3 || ref.Rows[2].Line != 6 || ref.Rows[0].Source != "seed 001, table 1" {
		t.Fatalf("%+v", ref)
	}
	if row, ok := ref.Lookup(map[string]string{"delay": "10ms", "transport": "reno", "variant": "x"}, "TCP upload", true, "mean"); !ok || row.Value != 93.9 {
		t.Errorf("main series, mean: %+v %v", row, ok)
	}
	if _, ok := ref.Lookup(map[string]string{"delay": "10ms", "transport": "reno"}, "TCP upload", false, "mean"); ok {
		t.Error("a row for the main series matched a series chosen by name")
	}
	if row, ok := ref.Lookup(map[string]string{"delay": "10ms", "transport": "cubic"}, "TCP upload", false, "median"); !ok || row.Value != 94.2 {
		t.Errorf("named series: %+v %v", row, ok)
	}
	if _, ok := ref.Lookup(map[string]string{"delay": "10ms"}, "", true, "mean"); ok {
		t.Error("a case without the transport variable matched")
	}
	if err := ref.CheckVariables([]string{"delay", "transport", "variant"}); err != nil {
		t.Error(err)
	}
	if err := ref.CheckVariables([]string{"delay"}); err == nil || !strings.Contains(err.Error(), `column "transport" is not a variable`) {
		t.Errorf("unknown variable: %v", err)
	}
	for _, c := range []struct{ text, want string }{
		{"", "empty"},
		{"delay,series,stat,value\n", `no "source" column`},
		{"delay,series,stat,value,source\n", "no figures"},
		{"delay,series,stat,value,source\n10ms,,avg,1,x\n", `stat "avg"`},
		{"delay,series,stat,value,source\n10ms,,mean,fast,x\n", `value "fast" is not a number`},
		{"delay,series,stat,value,source\n10ms,,mean,NaN,x\n", "not a number"},
		{"delay,series,stat,value,source\n10ms,,mean,1,\n", "source is empty"},
		{"delay,series,stat,value,source\n10ms,,mean,1,x\n10ms,,mean,2,y\n", "line 2"},
		{"delay,delay,series,stat,value,source\n", "appears twice"},
		{"delay,series,stat,value,source\n10ms,,mean\n", "wrong number of fields"},
	} {
		if _, err := ParseReference("r.csv", []byte(c.text)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v; want an error saying %q", c.text, err, c.want)
		}
	}
}
