// Package distfile reads netem distribution tables from files, found where
// tc finds them. A name with a slash or a ".dist" suffix is a path,
// relative to the working directory of the process that reads it; any
// other name is NAME.dist in $TC_LIB_DIR, /usr/lib/tc or /usr/lib64/tc, in
// that order, as iproute2's tc looks it up.
//
// A table is read by the program the user runs, never by a testbed's
// router on its behalf: the router runs in another working directory and
// would find another file of the same name (see lab.Set).
package distfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"wanlab/internal/infile"
	"wanlab/qdisc"
)

// MaxSize bounds a table file. A table holds at most qdisc.MaxDistTable
// (16384) values of at most six characters each, so tc's own tables are a
// few tens of KiB; the bound keeps a path such as /dev/zero from being read
// forever.
const MaxSize = 1 << 20

// Load reads the table name (see the package documentation).
func Load(name string) ([]int16, error) {
	var candidates []string
	if strings.ContainsRune(name, '/') || strings.HasSuffix(name, ".dist") {
		candidates = []string{name}
	} else {
		for _, dir := range []string{os.Getenv("TC_LIB_DIR"), "/usr/lib/tc", "/usr/lib64/tc"} {
			if dir != "" {
				candidates = append(candidates, filepath.Join(dir, name+".dist"))
			}
		}
	}
	for _, path := range candidates {
		text, err := read(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		table, err := qdisc.ParseDistTable(text)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return table, nil
	}
	return nil, fmt.Errorf("distribution %q not found (looked for %s); built in are uniform, normal, pareto, paretonormal, or give a path to a .dist file", name, strings.Join(candidates, ", "))
}

// read returns the contents of path, refusing what is not a regular file
// and anything longer than MaxSize; a missing file is os.ErrNotExist.
func read(path string) ([]byte, error) {
	b, err := infile.Read(path, MaxSize)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("distribution %v; give a .dist file made by tc's maketable (at most %d values)", err, qdisc.MaxDistTable)
	}
	return b, err
}
