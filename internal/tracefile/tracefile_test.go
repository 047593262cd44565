package tracefile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestLoad reads a trace and refuses, with the path and the fix, what is
// no trace file: a device (never read), a directory, a FIFO without a
// writer (which must not block), a bad line and a missing file.
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "ok.trace")
	if err := os.WriteFile(good, []byte("1\n1\n2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if tr, err := Load(good); err != nil || tr == nil {
		t.Fatalf("Load(%s) = %v, %v", good, tr, err)
	}
	bad := filepath.Join(dir, "bad.trace")
	if err := os.WriteFile(bad, []byte("1\nx\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"/dev/zero":                   "character device",
		dir:                           "is a directory",
		bad:                           bad + ":",
		filepath.Join(dir, "missing"): "no such file",
		fifo:                          "FIFO",
	} {
		_, err := Load(path)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Load(%s) = %v, want an error with %q", path, err, want)
		}
	}
}
