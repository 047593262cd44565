package testrun

import (
	"flag"
	"os"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/options.md from Table")

// Every experiment-file key of Options is in Table exactly once, and Table
// lists no key that Options lacks.
func TestTableMatchesOptions(t *testing.T) {
	keys := map[string]bool{}
	rt := reflect.TypeFor[Options]()
	for i := range rt.NumField() {
		k := rt.Field(i).Tag.Get("yaml")
		if k == "" {
			t.Errorf("Options.%s has no yaml key", rt.Field(i).Name)
		}
		keys[k] = true
	}
	seen := map[string]bool{}
	for _, o := range Table {
		if seen[o.Key] {
			t.Errorf("Table lists key %q twice", o.Key)
		}
		seen[o.Key] = true
		if !keys[o.Key] {
			t.Errorf("Table lists key %q, which Options lacks", o.Key)
		}
		if o.Flag == "" || o.Recorded == "" || o.Meaning == "" {
			t.Errorf("Table entry %q is incomplete: %+v", o.Key, o)
		}
	}
	for k := range keys {
		if !seen[k] {
			t.Errorf("Options has key %q, which Table does not list", k)
		}
	}
	rt = reflect.TypeFor[Change]()
	for i := range rt.NumField() {
		if rt.Field(i).Tag.Get("yaml") == "" {
			t.Errorf("Change.%s has no yaml key", rt.Field(i).Name)
		}
	}
}

// docs/options.md is Markdown() (regenerate with -update).
func TestOptionsDoc(t *testing.T) {
	const path = "../docs/options.md"
	want := Markdown()
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("%s differs from testrun.Table: regenerate it with `go test ./testrun -run TestOptionsDoc -update`", path)
	}
	if n := strings.Count(want, "\n| `"); n != len(Table) {
		t.Errorf("the table has %d rows, Table %d entries", n, len(Table))
	}
}
