package main

import (
	"bytes"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"wanlab/internal/resultstest"
)

// The figures of docs/experiments.md come out of data shipped in the
// repository, each table and graph by the command printed beside it
// (issue 18). A generated block is
//
//	<!-- generated: wanlab table docs/experiments/data/e3.summary.json.gz --where test=rrul --format markdown -->
//	...what the command prints...
//
//	(`wanlab table docs/experiments/data/e3.summary.json.gz --where test=rrul --format markdown`)
//
// the marker, invisible, then the block, then the same command for the
// reader, which ends the block. A command that writes files (--plot FILE,
// -o FILE) makes them instead, and its block is the image links to them,
// written by hand. TestExperimentsDocGenerated checks every block against
// its command, and rewrites them with -update: the golden-file flag of Go's
// tests (testrun's TestOptionsDoc does the same for docs/options.md), so
// that the check and the rewrite are one code path, run in-process from
// the repository's root exactly as a reader would type the command there.

var updateDocs = flag.Bool("update", false, "rewrite docs/experiments.md's generated blocks and graphs from docs/experiments/data/")

const (
	genOpen, genEnd = "<!-- generated: ", " -->"
	// shippedData is where the data of the generated blocks lives
	// (its README says what each file is and how it was made).
	shippedData = "docs/experiments/data/"
	// regenerate is the command that rewrites the blocks.
	regenerate = "go test ./cmd/wanlab -run TestExperimentsDocGenerated -update"
)

// genOutputFlags are the options by which a command writes files instead
// of its standard output: table's --plot and -o, plot's -o.
var genOutputFlags = []string{"--plot", "-o", "--output"}

// genBlock is one generated block of a document.
type genBlock struct {
	line  int      // the marker's line, from 1
	cmd   string   // the command as the marker and the closing line print it
	words []string // the command's words, "wanlab" first
	// The block's own lines, between the marker and the closing line:
	// lines[from:to] of the document.
	from, to int
}

func (b genBlock) String() string { return fmt.Sprintf("%d: `%s`", b.line, b.cmd) }

// closingLine is the visible line that prints a block's command and ends
// the block.
func closingLine(cmd string) string { return "(`" + cmd + "`)" }

// parseGenerated returns a document's generated blocks and what is wrong
// with its markers. Markers in fenced code (an example of one) are text.
func parseGenerated(lines []string) ([]genBlock, []string) {
	var blocks []genBlock
	var problems []string
	fenced := false
	for i := 0; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "```") {
			fenced = !fenced
		}
		cmd, ok := genMarker(lines[i])
		if !ok || fenced {
			continue
		}
		words := quotedFields(cmd)
		if len(words) < 2 || words[0] != "wanlab" {
			problems = append(problems, fmt.Sprintf("%d: %q: a generated block's command is one of wanlab's", i+1, cmd))
			continue
		}
		end := -1
		for j := i + 1; j < len(lines) && end < 0; j++ {
			if lines[j] == closingLine(cmd) {
				end = j
			} else if _, ok := genMarker(lines[j]); ok {
				break
			}
		}
		if end < 0 {
			problems = append(problems, fmt.Sprintf("%d: `%s` has no closing line %s before the next marker: it prints the command for the reader and ends the block", i+1, cmd, closingLine(cmd)))
			continue
		}
		blocks = append(blocks, genBlock{line: i + 1, cmd: cmd, words: words, from: i + 1, to: end})
		i = end
	}
	return blocks, problems
}

// genMarker returns the command of a marker line.
func genMarker(line string) (string, bool) {
	cmd, ok := strings.CutPrefix(strings.TrimSpace(line), genOpen)
	if !ok {
		return "", false
	}
	return strings.CutSuffix(cmd, genEnd)
}

// checkGenerated runs the command of every generated block of the
// document at docPath, in the working directory (the repository's root),
// and returns each difference between the document (and the files it
// links) and what the commands make, each naming its block. With update
// it rewrites the blocks and the files instead, and returns what it could
// not make.
func checkGenerated(t *testing.T, docPath string, update bool) []string {
	t.Helper()
	data, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	blocks, problems := parseGenerated(lines)
	for i := range problems {
		problems[i] = docPath + ":" + problems[i]
	}
	// The blocks to rewrite, with what their commands print.
	type rewrite struct {
		b    genBlock
		body []string
	}
	var rewrites []rewrite
	for _, b := range blocks {
		body, files, err := runBlock(t, b)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s:%s: %v", docPath, b, err))
			continue
		}
		if files == nil {
			if got := lines[b.from:b.to]; !slices.Equal(got, body) {
				if update {
					rewrites = append(rewrites, rewrite{b, body})
				} else {
					problems = append(problems, fmt.Sprintf("%s:%s: the block is not what the command prints (%s); regenerate: %s", docPath, b, firstDifference(got, body), regenerate))
				}
			}
			continue
		}
		for _, path := range slices.Sorted(maps.Keys(files)) {
			link, err := filepath.Rel(filepath.Dir(docPath), path)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(lines[b.from:b.to], "\n"), "]("+filepath.ToSlash(link)+")") {
				problems = append(problems, fmt.Sprintf("%s:%s: the block does not show %s: it links the files the command writes, ![...](%s)", docPath, b, path, filepath.ToSlash(link)))
			}
			old, err := os.ReadFile(path)
			switch {
			case err == nil && bytes.Equal(old, files[path]):
			case update:
				if err := os.WriteFile(path, files[path], 0o644); err != nil {
					t.Fatal(err)
				}
			case err != nil:
				problems = append(problems, fmt.Sprintf("%s:%s: %s is missing; regenerate: %s", docPath, b, path, regenerate))
			default:
				problems = append(problems, fmt.Sprintf("%s:%s: %s is not what the command draws; regenerate: %s", docPath, b, path, regenerate))
			}
		}
	}
	if len(rewrites) > 0 {
		// From the last, so that the earlier blocks keep their lines.
		for _, r := range slices.Backward(rewrites) {
			lines = slices.Concat(lines[:r.b.from], r.body, lines[r.b.to:])
		}
		if err := os.WriteFile(docPath, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return problems
}

// runBlock runs a block's command in-process and returns the block it
// prints (its standard output, then a blank line, which ends a Markdown
// table before the closing line), or, for a command that writes files,
// the files by the paths the command names, written into a directory of
// the test's instead. Every path the command gives under shippedData must
// exist: a block's data cannot go missing without the test saying so.
func runBlock(t *testing.T, b genBlock) (body []string, files map[string][]byte, err error) {
	t.Helper()
	args := slices.Clone(b.words[1:])
	// A check writes nothing into the repository: an output given in one
	// word (--plot=FILE) is refused, and plot, whose graph goes beside
	// its input by default, is given -o.
	for _, w := range args {
		if strings.HasPrefix(w, "-o") && w != "-o" || strings.HasPrefix(w, "--plot=") || strings.HasPrefix(w, "--output=") {
			return nil, nil, fmt.Errorf("%s: give an output file as a word of its own after its flag (--plot FILE, -o FILE)", w)
		}
	}
	if args[0] == "plot" && !slices.ContainsFunc(args, func(w string) bool { return slices.Contains(genOutputFlags, w) }) {
		return nil, nil, fmt.Errorf("give plot its graph's file with -o FILE")
	}
	readsData := false
	for _, w := range args {
		if !strings.HasPrefix(w, shippedData) {
			continue
		}
		readsData = true
		if _, err := os.Stat(w); err != nil {
			return nil, nil, fmt.Errorf("its data %s is missing: a generated block's data is shipped in %s, and its README says how it was made", w, shippedData)
		}
	}
	if !readsData && args[0] != "sim" {
		return nil, nil, fmt.Errorf("it reads no data shipped in %s: a generated block is made from the repository's own data", shippedData)
	}
	// Each file the command names is written into a directory of its own
	// here; dirs maps it back to the one the command names.
	dirs := map[string]string{}
	for i := 0; i+1 < len(args); i++ {
		if slices.Contains(genOutputFlags, args[i]) && args[i+1] != "-" {
			tmp := t.TempDir()
			dirs[tmp] = filepath.Dir(args[i+1])
			args[i+1] = filepath.Join(tmp, filepath.Base(args[i+1]))
		}
	}
	stdout, stderr, code := runWanlab(t, args...)
	if code != 0 {
		return nil, nil, fmt.Errorf("exit %d: %s", code, strings.TrimSpace(stderr))
	}
	if len(dirs) == 0 {
		if stderr != "" {
			t.Logf("%s: %s", b, strings.TrimSpace(stderr))
		}
		return append(strings.Split(strings.TrimRight(stdout, "\n"), "\n"), ""), nil, nil
	}
	files = map[string][]byte{}
	for tmp, dir := range dirs {
		entries, err := os.ReadDir(tmp)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(tmp, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			files[filepath.Join(dir, e.Name())] = data
		}
	}
	return nil, files, nil
}

// firstDifference says where two blocks' lines first differ.
func firstDifference(got, want []string) string {
	for i := range max(len(got), len(want)) {
		g, w := "(nothing)", "(nothing)"
		if i < len(got) {
			g = fmt.Sprintf("%q", got[i])
		}
		if i < len(want) {
			w = fmt.Sprintf("%q", want[i])
		}
		if g != w {
			return fmt.Sprintf("its line %d is %s, the command's %s", i+1, g, w)
		}
	}
	return "they are the same"
}

// docFigure is a table or an image of a reference experiment's section
// that no generated block makes.
type docFigure struct {
	section string // "E1"
	line    int    // from 1
	text    string // the table's first row, or the image's link
	// shipped: the section's data is in the repository, so every figure
	// of it must be generated (dataShipped).
	shipped bool
}

// dataShipped says whether a reference experiment's data is shipped,
// which is what makes its section's figures generated ones: the section
// "### E3: ..." once docs/experiments/data/e3.summary.json.gz is in the
// repository. Until then its hand-made tables and graphs are only listed
// (-v), so that E1 and E2 can wait for their reruns. This is the one
// switch; docs/experiments/data/README.md says so for the reader.
func dataShipped(section string) bool {
	_, err := os.Stat(shippedData + strings.ToLower(section) + ".summary.json.gz")
	return err == nil
}

// unmarkedFigures returns the tables and images of the reference
// experiments' sections ("### E1: ..." to the next heading of its level
// or above) that are outside every generated block.
func unmarkedFigures(lines []string, blocks []genBlock) []docFigure {
	inBlock := make([]bool, len(lines))
	for _, b := range blocks {
		for i := b.from - 1; i <= b.to; i++ {
			inBlock[i] = true
		}
	}
	var figs []docFigure
	section, fenced := "", false
	for i, l := range lines {
		if strings.HasPrefix(l, "```") {
			fenced = !fenced
		}
		if fenced {
			continue
		}
		if strings.HasPrefix(l, "## ") || strings.HasPrefix(l, "### ") {
			section = ""
			if name, _, ok := strings.Cut(strings.TrimPrefix(l, "### "), ":"); ok && strings.HasPrefix(l, "### E") {
				section = name
			}
		}
		if section == "" || inBlock[i] {
			continue
		}
		table := strings.HasPrefix(l, "|") && (i == 0 || !strings.HasPrefix(lines[i-1], "|"))
		if table || strings.HasPrefix(l, "![") {
			figs = append(figs, docFigure{section: section, line: i + 1, text: l, shipped: dataShipped(section)})
		}
	}
	return figs
}

// TestExperimentsDocGenerated: every generated block of
// docs/experiments.md is what its command prints (or draws) from the
// shipped data, and in the sections of the reference experiments whose
// data is shipped every table and graph is generated (issue 18). With
// -update it rewrites the blocks and graphs instead.
func TestExperimentsDocGenerated(t *testing.T) {
	t.Chdir("../..")
	const doc = "docs/experiments.md"
	for _, p := range checkGenerated(t, doc, *updateDocs) {
		t.Error(p)
	}
	data, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	blocks, _ := parseGenerated(lines)
	for _, f := range unmarkedFigures(lines, blocks) {
		if f.shipped {
			t.Errorf("%s:%d: %s's data is shipped, and this figure is not generated: put it between a generated block's marker and closing line (docs/experiments/data/README.md): %s", doc, f.line, f.section, f.text)
		} else {
			t.Logf("%s:%d: not generated yet (%s's data is not shipped): %s", doc, f.line, f.section, f.text)
		}
	}
}

// TestGeneratedBlocks checks the mechanism on a tiny experiment of its
// own, summarized as the shipped data is: the first check finds the empty
// block and the missing graph, -update makes them, a second check finds
// them the same (the table and the SVG come out byte for byte alike), and
// a changed figure, a changed graph, a graph the block does not show,
// missing data, a command that reads none, a marker without its closing
// line and the hand-made figures of a section whose data is shipped are
// each reported, naming the block.
func TestGeneratedBlocks(t *testing.T) {
	root := t.TempDir()
	t.Chdir(root)
	var cases []resultstest.Case
	for _, rate := range []float64{5, 10} {
		for _, q := range []string{"pfifo_fast", "fq_codel"} {
			p := resultstest.DefaultPath
			p.RateMbit = rate
			cases = append(cases, resultstest.Case{Vars: map[string]string{"rate": fmt.Sprintf("%gmbit", rate), "qdisc": q}, Test: "tcp_upload", Path: p})
		}
	}
	if err := os.MkdirAll("e9-results", 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := resultstest.Experiment("e9-results", "e9", []string{"rate", "qdisc"}, cases, 2, resultstest.Short, nil); err != nil {
		t.Fatal(err)
	}
	data := shippedData + "e9.summary.json.gz"
	for _, d := range []string{shippedData, "examples"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if _, stderr, code := runWanlab(t, "experiment", "summarize", "e9-results", "-o", data); code != 0 {
		t.Fatalf("summarize: %s", stderr)
	}
	if err := os.WriteFile("examples/e9.ref.csv", []byte("rate,qdisc,series,stat,value,source\n10mbit,fq_codel,,mean,9.5,seed 009\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const (
		doc   = "docs/experiments.md"
		table = "wanlab table " + shippedData + "e9.summary.json.gz --format markdown --reference examples/e9.ref.csv"
		graph = "wanlab table " + shippedData + "e9.summary.json.gz --plot docs/experiments/e9.svg"
	)
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(doc, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func() string {
		t.Helper()
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	check := func(update bool, want ...string) {
		t.Helper()
		got := checkGenerated(t, doc, update)
		if len(got) != len(want) {
			t.Fatalf("update %v: %d problems, want %d:\n%s", update, len(got), len(want), strings.Join(got, "\n"))
		}
		for i, w := range want {
			if !strings.Contains(got[i], w) {
				t.Errorf("update %v: problem %q lacks %q", update, got[i], w)
			}
		}
	}
	write("# Experiments\n\n```\n" + genOpen + "wanlab table an example" + genEnd + "\n```\n\n" +
		"### E8: no data\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n" +
		"### E9: tiny\n\n" + genOpen + table + genEnd + "\n" + closingLine(table) + "\n\n" +
		genOpen + graph + genEnd + "\n![E9](experiments/e9.svg)\n\n" + closingLine(graph) + "\n\n" +
		"| by | hand |\n|---|---|\n| 3 | 4 |\n\n![by hand](experiments/hand.svg)\n\n## Elsewhere\n\n| x |\n|---|\n")

	// The empty block and the missing graph, then -update makes both
	// and a second check finds them the same.
	got := checkGenerated(t, doc, false)
	if want := []string{
		doc + ":15: `" + table + "`: the block is not what the command prints (its line 1 is (nothing), the command's \"e9: mean of TCP upload (Mbits/s), mean of 2 runs ± sample std dev\"); regenerate: " + regenerate,
		doc + ":18: `" + graph + "`: docs/experiments/e9.svg is missing; regenerate: " + regenerate,
	}; !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	check(true)
	check(false)
	printed, _, _ := runWanlab(t, strings.Fields(table)[1:]...)
	if want := genOpen + table + genEnd + "\n" + printed + "\n" + closingLine(table) + "\n"; !strings.Contains(read(), want) {
		t.Errorf("the block is not the command's output:\n%s\nwant it to hold\n%s", read(), want)
	}
	if img := readSVG(t, "docs/experiments/e9.svg"); !hasText(img, "e9") {
		t.Errorf("the graph: %v", img.Texts)
	}
	regenerated := read()

	// A changed figure, a changed graph and a graph the block does not
	// show.
	write(strings.Replace(regenerated, "| 5mbit |", "| 5mbit | 1 |", 1))
	check(false, ":15: `"+table+"`: the block is not what the command prints (its line 5 is \"| 5mbit | 1 |")
	write(strings.Replace(regenerated, "![E9](experiments/e9.svg)", "![E9](experiments/e1.svg)", 1))
	check(false, ":27: `"+graph+"`: the block does not show docs/experiments/e9.svg")
	write(regenerated)
	svg, _ := os.ReadFile("docs/experiments/e9.svg")
	os.WriteFile("docs/experiments/e9.svg", append(svg, '\n'), 0o644)
	check(false, ":27: `"+graph+"`: docs/experiments/e9.svg is not what the command draws; regenerate: "+regenerate)
	check(true)
	check(false)

	// The hand-made figures: listed, and to be generated in E9, whose
	// data is shipped; a section without data, or not a reference
	// experiment's, is left as it is.
	lines := strings.Split(regenerated, "\n")
	blocks, problems := parseGenerated(lines)
	if len(blocks) != 2 || len(problems) != 0 {
		t.Fatalf("%d blocks, problems %q", len(blocks), problems)
	}
	want := []docFigure{{"E8", 9, "| a | b |", false}, {"E9", 32, "| by | hand |", true}, {"E9", 36, "![by hand](experiments/hand.svg)", true}}
	if figs := unmarkedFigures(lines, blocks); !slices.Equal(figs, want) {
		t.Errorf("unmarked figures %v, want %v", figs, want)
	}

	// Data gone, data not shipped, a marker without its closing line.
	if err := os.Remove(data); err != nil {
		t.Fatal(err)
	}
	missing := "its data " + data + " is missing"
	check(true, ":15: `"+table+"`: "+missing, ":27: `"+graph+"`: "+missing)
	if dataShipped("E9") {
		t.Error("E9's data is gone, and dataShipped says it is shipped")
	}
	write(genOpen + "wanlab table e9-results" + genEnd + "\n" + closingLine("wanlab table e9-results") + "\n" +
		genOpen + "wanlab table e9-results --format csv" + genEnd + "\n\n" + genOpen + "table x" + genEnd + "\n" +
		genOpen + "wanlab plot " + data + " --kind sweep" + genEnd + "\n" + closingLine("wanlab plot "+data+" --kind sweep") + "\n" +
		genOpen + "wanlab table " + data + " --plot=x.svg" + genEnd + "\n" + closingLine("wanlab table "+data+" --plot=x.svg") + "\n")
	check(false, ":3: `wanlab table e9-results --format csv` has no closing line (`wanlab table e9-results --format csv`) before the next marker",
		`:5: "table x": a generated block's command is one of wanlab's`,
		":1: `wanlab table e9-results`: it reads no data shipped in "+shippedData,
		":6: `wanlab plot "+data+" --kind sweep`: give plot its graph's file with -o FILE",
		":8: `wanlab table "+data+" --plot=x.svg`: --plot=x.svg: give an output file as a word of its own")
}
