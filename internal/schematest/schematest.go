// Package schematest checks wanlab's JSON output against its documented
// schema: every key snake_case and described in docs/results-format.md
// (or, for JSON that document does not list key by key, snake_case). It
// is for tests only.
package schematest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// DocPath is the schema's documentation, relative to the module root.
const DocPath = "docs/results-format.md"

var snake = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// CheckKeys marshals v and reports, as test errors, every object key in it
// that is not snake_case or does not appear in DocPath as `key`. Fill v so
// that the optional keys are present. It returns the decoded JSON for
// further checks.
func CheckKeys(t testing.TB, v any) map[string]any {
	t.Helper()
	m := decode(t, v)
	doc := readDoc(t)
	walkKeys("", m, func(path, k string) {
		if !snake.MatchString(k) {
			t.Errorf("%s: key %q is not snake_case", path, k)
		}
		if !strings.Contains(doc, "`"+k+"`") {
			t.Errorf("%s: key %q is not described in %s", path, k, DocPath)
		}
	})
	return m
}

// CheckSnakeCase marshals v and reports, as test errors, every object key
// in it that is not snake_case, for JSON that DocPath does not describe
// key by key. It returns the decoded JSON and how many keys it holds at
// every depth, by which a test that filled v to cover the schema sees
// that the nested objects were not left out.
func CheckSnakeCase(t testing.TB, v any) (m map[string]any, keys int) {
	t.Helper()
	m = decode(t, v)
	walkKeys("", m, func(path, k string) {
		keys++
		if !snake.MatchString(k) {
			t.Errorf("%s: key %q is not snake_case", path, k)
		}
	})
	return m, keys
}

// CheckFilled is CheckSnakeCase for a flow's result that a test filled to
// cover its schema: it also checks that the walk found at least minKeys
// keys (the nested objects were not left out) and that v's JSON holds
// each of want, a value as it is written ("direction":"down").
func CheckFilled(t testing.TB, v any, minKeys int, want ...string) {
	t.Helper()
	_, keys := CheckSnakeCase(t, v)
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if keys < minKeys {
		t.Errorf("only %d keys, want %d or more: the walk missed nested objects in %s", keys, minKeys, b)
	}
	for _, w := range want {
		if !strings.Contains(string(b), w) {
			t.Errorf("JSON lacks %s: %s", w, b)
		}
	}
}

// decode marshals v and decodes it again as a JSON object.
func decode(t testing.TB, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// walkKeys calls visit with every object key in the decoded JSON v, at
// every depth, and the path of the object that holds it.
func walkKeys(path string, v any, visit func(path, key string)) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			visit(path, k)
			walkKeys(path+"."+k, e, visit)
		}
	case []any:
		for _, e := range v {
			walkKeys(path+"[]", e, visit)
		}
	}
}

// readDoc reads DocPath from the module root above the working directory.
func readDoc(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			b, err := os.ReadFile(filepath.Join(dir, DocPath))
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("no go.mod above the working directory, so no %s", DocPath)
		}
		dir = parent
	}
}
