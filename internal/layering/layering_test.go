// Package layering checks that wanlab's emulation core stays pure: it imports
// nothing of the operating system or the network, starts no goroutines and
// never reads the wall clock, so that it runs identically on a virtual clock
// (tests, the simulator) and in the real-time router.
package layering

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// core lists the packages of the pure core, relative to the module root.
var core = []string{"clock", "packet", "qdisc", "tcspec", "link", "sim", "stats", "catalog", "profile", "fidelity", "tfrc", "scalable", "internal/wirehdr"}

// allowed are the packages under a forbidden prefix that the core may
// use: net/netip is addresses as values (parsing, prefixes, comparison),
// with no socket, no resolver and no I/O, which tc's u32 matches on
// addresses need; a parser of its own would be a second, weaker copy.
var allowed = map[string]bool{"net/netip": true}

// forbidden maps import paths (or prefixes ending in "/") to the reason the
// core may not use them.
var forbidden = map[string]string{
	"os":                        "file and process I/O belongs to the edge (cmd, netns, router)",
	"os/":                       "file and process I/O belongs to the edge",
	"net":                       "network I/O belongs to the router and traffic packages",
	"net/":                      "network I/O belongs to the router and traffic packages",
	"syscall":                   "system calls belong to the edge",
	"golang.org/x/sys/":         "system calls belong to the edge",
	"io/ioutil":                 "file I/O belongs to the edge",
	"io/fs":                     "file I/O belongs to the edge",
	"path/filepath":             "file paths belong to the edge",
	"log":                       "the core reports through return values and hooks, not logs",
	"log/":                      "the core reports through return values and hooks, not logs",
	"math/rand":                 "use math/rand/v2 with an explicit seed",
	"crypto/rand":               "randomness must be seeded and reproducible",
	"github.com/vishvananda/":   "netlink belongs to netns",
	"golang.zx2c4.com/":         "TUN devices belong to the tun package",
	"wanlab/netns":              "edge package",
	"wanlab/tun":                "edge package",
	"wanlab/packetsock":         "edge package",
	"wanlab/bridgeport":         "edge package",
	"wanlab/router":             "edge package",
	"wanlab/lab":                "edge package",
	"wanlab/internal/distfile":  "reading files belongs to the edge",
	"wanlab/internal/outfile":   "file output belongs to the edge",
	"wanlab/internal/tracefile": "reading files belongs to the edge",
	"wanlab/internal/infile":    "reading files belongs to the edge",
	"wanlab/traffic":            "edge package",
	"wanlab/cmd/":               "edge package",
	"wanlab/internal/coretest":  "test helpers: only the core's _test.go files may use them",
}

// wallClock lists time functions that read or wait on the real clock. The
// clock package's Real type is the one sanctioned use.
var wallClock = map[string]bool{"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true, "AfterFunc": true, "NewTimer": true, "NewTicker": true, "Tick": true}

// globalRand lists math/rand/v2 functions that use the unseeded global source.
var globalRand = map[string]bool{"Int": true, "IntN": true, "Int32": true, "Int32N": true, "Int64": true, "Int64N": true, "Uint32": true, "Uint32N": true, "Uint64": true, "Uint64N": true, "UintN": true, "Float32": true, "Float64": true, "Perm": true, "Shuffle": true, "N": true, "NormFloat64": true, "ExpFloat64": true}

func forbiddenReason(path string) (string, bool) {
	if allowed[path] {
		return "", false
	}
	for k, why := range forbidden {
		if path == k || (strings.HasSuffix(k, "/") && strings.HasPrefix(path, k)) {
			return why, true
		}
	}
	return "", false
}

func TestCoreIsPure(t *testing.T) {
	root := filepath.Join("..", "..")
	checked := 0
	for _, pkg := range core {
		dir := filepath.Join(root, pkg)
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			checked++
			fset := token.NewFileSet()
			file, err := parser.ParseFile(fset, f, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			names := map[string]string{} // local name -> import path
			for _, imp := range file.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if why, bad := forbiddenReason(path); bad {
					t.Errorf("%s imports %q: %s", f, path, why)
				}
				local := path[strings.LastIndex(path, "/")+1:]
				if path == "math/rand/v2" {
					local = "rand"
				}
				if imp.Name != nil {
					local = imp.Name.Name
				}
				names[local] = path
			}
			ast.Inspect(file, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.GoStmt:
					t.Errorf("%s: a go statement: the core starts no goroutines", fset.Position(n.Pos()))
				case *ast.SelectorExpr:
					id, ok := n.X.(*ast.Ident)
					if !ok {
						return true
					}
					switch names[id.Name] {
					case "time":
						if wallClock[n.Sel.Name] && !(pkg == "clock" && filepath.Base(f) == "real.go") {
							t.Errorf("%s: time.%s reads the wall clock: take now as an argument", fset.Position(n.Pos()), n.Sel.Name)
						}
					case "math/rand/v2":
						if globalRand[n.Sel.Name] {
							t.Errorf("%s: rand.%s uses the global source: use a seeded *rand.Rand", fset.Position(n.Pos()), n.Sel.Name)
						}
					}
				}
				return true
			})
		}
	}
	if checked == 0 {
		t.Fatal("no core source files found: is the package list out of date?")
	}
}

// TestCheckerCatchesViolations makes sure the checker itself can fail.
func TestCheckerCatchesViolations(t *testing.T) {
	for _, p := range []string{"os", "os/exec", "net", "net/http", "golang.org/x/sys/unix", "wanlab/router", "wanlab/internal/coretest"} {
		if _, bad := forbiddenReason(p); !bad {
			t.Errorf("%q should be forbidden in the core", p)
		}
	}
	for _, p := range []string{"time", "math", "math/rand/v2", "wanlab/qdisc", "encoding/binary", "sort", "fmt", "net/netip"} {
		if _, bad := forbiddenReason(p); bad {
			t.Errorf("%q should be allowed in the core", p)
		}
	}
	if _, err := os.Stat(filepath.Join("..", "..", "go.mod")); err != nil {
		t.Fatalf("module root not where expected: %v", err)
	}
}

// views are the packages that read saved results: every one of their
// figures must come from the results document, so that a saved file gives
// the same view on any machine, root or not.
var views = []string{"results", "plot", "report", "experiment", "compare"}

// lab lists the packages that build or run a path, which no view may
// depend on, directly or through another package.
var lab = map[string]string{
	"wanlab/lab":     "testbeds",
	"wanlab/router":  "the real-time router",
	"wanlab/netns":   "namespaces",
	"wanlab/tun":     "TUN devices",
	"wanlab/traffic": "live traffic",
	"wanlab/testrun": "running a test",
}

// wanlabImports returns the wanlab packages that the non-test files of
// the package at path (an import path) import.
func wanlabImports(t *testing.T, path string) []string {
	t.Helper()
	dir := filepath.Join("..", "..", strings.TrimPrefix(path, "wanlab/"))
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range file.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, "wanlab/") {
				out = append(out, p)
			}
		}
	}
	return out
}

// labPath returns the chain of imports by which pkg reaches a package of
// lab, or nil.
func labPath(t *testing.T, pkg string) []string {
	seen := map[string]bool{}
	var walk func(p string) []string
	walk = func(p string) []string {
		if _, bad := lab[p]; bad {
			return []string{p}
		}
		if seen[p] {
			return nil
		}
		seen[p] = true
		for _, q := range wanlabImports(t, p) {
			if chain := walk(q); chain != nil {
				return append([]string{p}, chain...)
			}
		}
		return nil
	}
	return walk(pkg)
}

// TestViewsStayOffTheLab: the views import nothing that builds or runs a
// path, however indirectly (experiment runs its runs through a Backend,
// which experiment/runner implements).
func TestViewsStayOffTheLab(t *testing.T) {
	for _, v := range views {
		if chain := labPath(t, "wanlab/"+v); chain != nil {
			t.Errorf("%s reaches %s (%s) through %s", v, chain[len(chain)-1], lab[chain[len(chain)-1]], strings.Join(chain, " -> "))
		}
	}
	// The check can fail: the runner, which runs an experiment's runs,
	// reaches the lab.
	if labPath(t, "wanlab/experiment/runner") == nil {
		t.Error("experiment/runner does not reach the lab: is the check blind?")
	}
}
