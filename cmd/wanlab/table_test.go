package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Bad table command lines exit 2 with the fix, before anything is written.
func TestTableUsageErrors(t *testing.T) {
	empty := t.TempDir()
	notIndex := t.TempDir()
	os.WriteFile(filepath.Join(notIndex, "index.json"), []byte(`{"format":"something-else"}`), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"table"}, "accepts 1 arg"},
		{[]string{"table", empty}, "no index.json"},
		{[]string{"table", empty, "--format", "xml"}, `--format "xml": use text, markdown or csv`},
		{[]string{"table", empty, "--where", "delay"}, "write VAR=VALUE"},
		{[]string{"table", empty, "-o", empty}, "is a directory"},
		{[]string{"table", empty, "--plot", "x.pdf"}, "--plot: \"x.pdf\": the extension .pdf is not an image format"},
	} {
		_, errOut, code := runWanlab(t, c.args...)
		msg := strings.TrimSpace(errOut)
		if code != exitUsage || !strings.Contains(msg, c.want) {
			t.Errorf("wanlab %q: exit %d, stderr %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
	if _, errOut, code := runWanlab(t, "table", notIndex); code == 0 || !strings.Contains(errOut, "not an experiment index") {
		t.Errorf("a foreign index.json: exit %d, %q", code, errOut)
	}
}
