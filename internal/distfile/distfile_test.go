package distfile

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestLoadPathsAndLibraryDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "mine.dist"), []byte("# a comment\n1 -2 0x10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	t.Setenv("TC_LIB_DIR", dir)
	for _, name := range []string{"mine.dist", "./mine.dist", filepath.Join(dir, "mine.dist"), "mine"} {
		got, err := Load(name)
		if err != nil || !slices.Equal(got, []int16{1, -2, 16}) {
			t.Errorf("Load(%q) = %v, %v; want [1 -2 16]", name, got, err)
		}
	}
	// A relative path is the caller's: from another directory it is
	// another file, or none.
	t.Chdir(t.TempDir())
	if _, err := Load("mine.dist"); err == nil || !strings.Contains(err.Error(), `"mine.dist" not found`) {
		t.Errorf("Load(mine.dist) from another directory = %v, want not found", err)
	}
}

func TestLoadRefusesWhatIsNoTable(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.dist")
	if err := os.WriteFile(big, []byte(strings.Repeat("1 ", MaxSize)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, want string }{
		{"/dev/zero", "character device"},
		{big, "larger than 1 MiB"},
		{dir, "is a directory"},
		{filepath.Join(dir, "none.dist"), "not found"},
	} {
		if _, err := Load(c.name); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Load(%q) = %v, want an error saying %q", c.name, err, c.want)
		}
	}
}
