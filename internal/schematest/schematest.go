// Package schematest checks wanlab's JSON output against its documented
// schema: every key snake_case and described in docs/results-format.md. It
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
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	doc := readDoc(t)
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if !snake.MatchString(k) {
					t.Errorf("%s: key %q is not snake_case", path, k)
				}
				if !strings.Contains(doc, "`"+k+"`") {
					t.Errorf("%s: key %q is not described in %s", path, k, DocPath)
				}
				walk(path+"."+k, e)
			}
		case []any:
			for _, e := range v {
				walk(path+"[]", e)
			}
		}
	}
	walk("", m)
	return m
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
