package results

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"image/png"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"wanlab/internal/outfile"
)

// needFlent skips the test when Flent is not installed.
func needFlent(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("flent"); err != nil {
		t.Skip("flent is not on PATH; .ci/run installs it (apt-get install -y flent)")
	}
}

// runFlent runs the installed flent with args, its home and matplotlib
// cache in a temporary directory, and returns what it printed on stdout.
// It fails the test when flent exits non-zero or reports an error: Flent
// logs most failures (a traceback, an ERROR line) and still exits 0.
func runFlent(t *testing.T, args ...string) string {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command("flent", args...)
	cmd.Env = append(os.Environ(), "HOME="+home, "MPLCONFIGDIR="+home, "XDG_CACHE_HOME="+home, "XDG_CONFIG_HOME="+home)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("flent %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	for _, out := range []string{stdout.String(), stderr.String()} {
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "ERROR") || strings.HasPrefix(line, "CRITICAL") || strings.Contains(line, "Traceback") {
				t.Fatalf("flent %s failed:\n%s%s", strings.Join(args, " "), stdout.String(), stderr.String())
			}
		}
	}
	return stdout.String()
}

// storedRuns holds the results files of short real runs of every test
// wanlab exports (wanlab run TEST --duration 3s --lead 1s --tail 1s, as
// root; ping without lead and tail), one per test, named TEST.json.gz, so
// that the tests below need neither root nor a run.
const storedRuns = "testdata/flent"

// storedTests are the tests with a stored run: Flent's first tests, and
// wanlab's own. Flent's tests of mixed flows (tcp_4up, cubic_bbr, ...)
// have none: testrun checks their exports against Flent's definitions
// and has the real flent read them.
var storedTests = []string{"ping", "rrul", "rrul_be", "tcp_bidirectional", "tcp_download", "tcp_ndown", "tcp_nup", "tcp_upload", "udp_flood"}

// exportedTests are the tests whose stored runs export: Flent's, then
// wanlab's own that go under a Flent test's layout.
func exportedTests() []string {
	own := make([]string, 0, len(flentLayouts))
	for n := range flentLayouts {
		own = append(own, n)
	}
	sort.Strings(own)
	return append(slices.Clone(storedTests), own...)
}

// exportStored reads the stored run of test and writes it as a Flent data
// file in a temporary directory; it returns the run and the file.
func exportStored(t *testing.T, test string) (*Document, string) {
	t.Helper()
	d, err := ReadFile(filepath.Join(storedRuns, test+".json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if d.Run.Test != test {
		t.Fatalf("%s.json.gz is a run of %s", test, d.Run.Test)
	}
	path := filepath.Join(t.TempDir(), test+".flent.gz")
	if err := WriteFlentFile(context.Background(), path, d, outfile.Options{}); err != nil {
		t.Fatal(err)
	}
	return d, path
}

// readFlentFile reads the metadata and the results of a Flent data file.
func readFlentFile(t *testing.T, path string) (meta map[string]any, res map[string][]*float64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var data struct {
		Metadata map[string]any        `json:"metadata"`
		Results  map[string][]*float64 `json:"results"`
	}
	if err := json.NewDecoder(zr).Decode(&data); err != nil {
		t.Fatal(err)
	}
	return data.Metadata, data.Results
}

// statBlock is one series' block of figures as `flent -f stats` or
// `wanlab show` prints it: each field's value and unit as printed, or "No
// data.".
type statBlock struct {
	fields map[string][2]string
	noData bool
}

// parseStats reads the series blocks of a summary (" NAME:" and its
// "  Field: value unit" lines) from the line after the one that starts
// with from up to the first line that starts with no space.
func parseStats(t *testing.T, text, from string) map[string]*statBlock {
	t.Helper()
	blocks := make(map[string]*statBlock)
	var cur *statBlock
	in := false
	for _, line := range strings.Split(text, "\n") {
		switch {
		case !in:
			in = strings.HasPrefix(line, from)
		case line == "":
		case !strings.HasPrefix(line, " "):
			return blocks
		case line == "  No data.":
			cur.noData = true
		case strings.HasPrefix(line, "  "):
			key, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
			fields := strings.Fields(rest)
			if !ok || cur == nil || len(fields) == 0 {
				t.Fatalf("unexpected line %q", line)
			}
			cur.fields[key] = [2]string{fields[0], strings.Join(fields[1:], " ")}
		case strings.HasSuffix(line, ":"):
			cur = &statBlock{fields: make(map[string][2]string)}
			blocks[strings.TrimSuffix(line[1:], ":")] = cur
		default:
			t.Fatalf("unexpected line %q", line)
		}
	}
	if !in {
		t.Fatalf("no line starts with %q in:\n%s", from, text)
	}
	return blocks
}

// flentFields are the figures Flent's -f stats prints of a series.
var flentFields = []string{"Data points", "Total", "Min", "Median", "99th %", "Max", "Mean", "Std dev", "Variance"}

// samePrinted reports whether two figures printed with the same number of
// decimals are equal to that precision: the same text, or one unit of the
// last digit apart, since two float computations of one figure (numpy's
// pairwise sums, Go's running ones) may round to either side of it.
func samePrinted(a, b string) bool {
	if a == b {
		return true
	}
	x, errA := strconv.ParseFloat(a, 64)
	y, errB := strconv.ParseFloat(b, 64)
	_, frac, _ := strings.Cut(a, ".")
	_, fracB, _ := strings.Cut(b, ".")
	if errA != nil || errB != nil || len(frac) != len(fracB) {
		return false
	}
	return math.Abs(x-y) <= math.Pow(10, -float64(len(frac)))*(1+1e-9)
}

// TestFlentStatsMatchShow exports the stored run of every test that
// exports, has the real flent summarise the file (flent -i FILE -f stats)
// and compares its figures, field by field, with what `wanlab show` prints
// of the run (WriteSummary): every figure both print must be the same to
// the printed precision, data points included, and in the same unit where
// Flent's test gives one. A series Flent has no figures for ("No data.")
// must be one whose mean is 0, which Flent's reducers take as missing.
func TestFlentStatsMatchShow(t *testing.T) {
	needFlent(t)
	for _, test := range exportedTests() {
		t.Run(test, func(t *testing.T) {
			t.Parallel()
			d, path := exportStored(t, test)
			var show bytes.Buffer
			if err := WriteSummary(&show, d, false); err != nil {
				t.Fatal(err)
			}
			ours := parseStats(t, show.String(), "Each series is summarised")
			theirs := parseStats(t, runFlent(t, "-i", path, "-f", "stats"), "Results ")

			// The series Flent names differently (TCP upload for a
			// tfrc_upload's TFRC upload), from the file's metadata.
			flentName := func(n string) string { return n }
			meta, _ := readFlentFile(t, path)
			if m, ok := meta["WANLAB"].(map[string]any)["series"].(map[string]any); ok {
				back := make(map[string]string, len(m))
				for flent, own := range m {
					back[own.(string)] = flent
				}
				flentName = func(n string) string {
					if f, ok := back[n]; ok {
						return f
					}
					return n
				}
			}
			if len(theirs) != len(ours) || len(ours) != len(d.Series) {
				t.Errorf("flent prints %d series, show %d, the run has %d", len(theirs), len(ours), len(d.Series))
			}
			compared := 0
			for i := range d.Series {
				s := &d.Series[i]
				our, their := ours[s.Name], theirs[flentName(s.Name)]
				switch {
				case our == nil:
					t.Errorf("%s: show prints no figures", s.Name)
					continue
				case their == nil:
					t.Errorf("%s: flent prints no series %q", s.Name, flentName(s.Name))
					continue
				case their.noData:
					if s.Summary.N > 0 && s.Summary.Mean != 0 {
						t.Errorf("%s: flent prints \"No data.\"; show prints %v", s.Name, our.fields)
					}
					continue
				}
				for _, field := range flentFields {
					o, inOurs := our.fields[field]
					f, inTheirs := their.fields[field]
					switch {
					case !inOurs && !inTheirs:
					case !inOurs:
						// Flent totals every series not in ms; show only
						// rates, whose total is an amount.
						if field != "Total" || s.IsRate() {
							t.Errorf("%s: flent prints %s %v, show none", s.Name, field, f)
						}
					case !inTheirs:
						t.Errorf("%s: show prints %s %v, flent none", s.Name, field, o)
					case !samePrinted(o[0], f[0]) || (f[1] != "" && f[1] != o[1]):
						t.Errorf("%s: %s: show prints %s %s, flent %s %s", s.Name, field, o[0], o[1], f[0], f[1])
					default:
						compared++
					}
				}
			}
			t.Logf("%d figures of %d series agree", compared, len(d.Series))
		})
	}
}

// flentPlots are the plots of Flent's tests drawn from our files: of
// all_scaled, box_totals and ping_cdf, those each test has in Flent 2.1.1
// (flent --list-plots TEST).
var flentPlots = map[string][]string{
	"ping":              {"ping_cdf"},
	"tcp_upload":        {"box_totals", "ping_cdf"},
	"tcp_download":      {"box_totals", "ping_cdf"},
	"tcp_bidirectional": {"box_totals", "ping_cdf"},
	"tcp_nup":           {"box_totals", "ping_cdf"},
	"tcp_ndown":         {"box_totals", "ping_cdf"},
	"udp_flood":         {"ping_cdf"},
	"rrul":              {"all_scaled", "box_totals", "ping_cdf"},
	"rrul_be":           {"all_scaled", "box_totals", "ping_cdf"},
}

// TestFlentPlots has the real flent draw, from the export of the stored
// run of every test that exports, the plots of flentPlots of the Flent
// test it goes under (box_totals alone for a test of wanlab's own): each
// must exit 0 without an error and write a PNG.
// That the plots' series are in the file TestFlentLayoutSeries checks, and
// that Flent finds data in them TestFlentStatsMatchShow.
func TestFlentPlots(t *testing.T) {
	for _, test := range storedTests {
		if len(flentPlots[test]) == 0 {
			t.Errorf("flentPlots has no plot of %s", test)
		}
	}
	needFlent(t)
	for _, test := range exportedTests() {
		t.Run(test, func(t *testing.T) {
			t.Parallel()
			_, path := exportStored(t, test)
			as, err := FlentLayout(test)
			if err != nil {
				t.Fatal(err)
			}
			plots := flentPlots[as]
			if as != test {
				// A test of wanlab's own differs from the Flent test's
				// file in its renamed load series, which box_totals
				// draws; its ping is drawn as in the Flent test's.
				plots = []string{"box_totals"}
			}
			for _, plot := range plots {
				out := filepath.Join(filepath.Dir(path), plot+".png")
				runFlent(t, "-i", path, "-p", plot, "-o", out)
				f, err := os.Open(out)
				if err != nil {
					t.Fatalf("plot %s: %v", plot, err)
				}
				cfg, err := png.DecodeConfig(f)
				f.Close()
				if err != nil || cfg.Width < 100 || cfg.Height < 100 {
					t.Errorf("plot %s: %v, %dx%d: not a drawn PNG", plot, err, cfg.Width, cfg.Height)
				}
			}
		})
	}
}

// TestFlentLayoutSeries checks, without Flent, what a file tells Flent
// about its test: NAME is the Flent test (the run's, or the one whose
// layout a test of wanlab's shares), WANLAB records the run's test and
// the series renamed, and the file has every series the stored run of
// the Flent test itself has, so that the Flent test's plots find theirs.
func TestFlentLayoutSeries(t *testing.T) {
	for _, test := range exportedTests() {
		_, path := exportStored(t, test)
		meta, have := readFlentFile(t, path)
		as, err := FlentLayout(test)
		if err != nil {
			t.Fatal(err)
		}
		wl := meta["WANLAB"].(map[string]any)
		if meta["NAME"] != as || wl["test"] != test {
			t.Errorf("%s: NAME %v, WANLAB test %v; want %s and %s", test, meta["NAME"], wl["test"], as, test)
		}
		renamed, _ := wl["series"].(map[string]any)
		if (as != test) != (len(renamed) > 0) || (as != test) != strings.HasPrefix(meta["TITLE"].(string), "wanlab "+test+" as Flent's "+as) {
			t.Errorf("%s: TITLE %q, WANLAB series %v", test, meta["TITLE"], renamed)
		}
		native, err := ReadFile(filepath.Join(storedRuns, as+".json.gz"))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range native.Series {
			if _, ok := have[s.Name]; !ok {
				t.Errorf("%s as %s: the file has no %q", test, as, s.Name)
			}
		}
		for flent, own := range renamed {
			if _, ok := have[own.(string)]; ok {
				t.Errorf("%s: the file has both %q and %q", test, own, flent)
			}
		}
		for name, m := range meta["SERIES_META"].(map[string]any) {
			if _, ok := m.(map[string]any)["MEAN_VALUE"]; ok {
				t.Errorf("%s: %s has a MEAN_VALUE, which Flent would print as the mean and count the grid by", test, name)
			}
		}
	}
}

// TestFlentFileLayout checks the file's structure without Flent: what the
// loader and the reducers read.
func TestFlentFileLayout(t *testing.T) {
	d := synthDoc("tcp_nup", 3)
	d.Run.Options = map[string]string{"upload_streams": "9", "cc_algos": "cubic"}
	var buf bytes.Buffer
	if err := WriteFlent(&buf, d); err != nil {
		t.Fatal(err)
	}
	var f struct {
		Version   int                         `json:"version"`
		Metadata  map[string]any              `json:"metadata"`
		XValues   []float64                   `json:"x_values"`
		Results   map[string][]*float64       `json:"results"`
		RawValues map[string][]map[string]any `json:"raw_values"`
	}
	if err := json.Unmarshal(buf.Bytes(), &f); err != nil {
		t.Fatal(err)
	}
	m := f.Metadata
	if f.Version != 4 || m["NAME"] != "tcp_nup" || m["T0"] != "2026-03-04T05:06:07.123456Z" || m["TIME"] != m["T0"] ||
		m["STEP_SIZE"] != 0.2 || m["LENGTH"] != 10.0 || m["TOTAL_LENGTH"] != 14.0 || m["DELAY"] != 2.0 {
		t.Errorf("metadata %v", m)
	}
	params := m["TEST_PARAMETERS"].(map[string]any)
	if params["upload_streams"] != "4" || params["cc_algos"] != "cubic" {
		t.Errorf("TEST_PARAMETERS %v: upload_streams must count the file's flows", params)
	}
	n := d.GridLen()
	if len(f.XValues) != n || f.XValues[3] != 0.6 || f.XValues[n-1] != math.Round(float64(n-1)*0.2*1e9)/1e9 {
		t.Errorf("x_values: %d, %v", len(f.XValues), f.XValues[:4])
	}
	t0 := 1772600767.123456 // 2026-03-04T05:06:07.123456Z
	flow := f.RawValues["TCP upload::1"]
	if len(flow) != 50 {
		t.Fatalf("raw values of a flow: %d, want the 50 in its window", len(flow))
	}
	r := flow[0]
	if math.Abs(r["t"].(float64)-(t0+2.2)) > 1e-6 || r["dur"] != 0.2 || r["tcp_cwnd"] == nil || r["tcp_rtt"] == nil || r["val"] == nil {
		t.Errorf("first raw record of TCP upload::1: %v", r)
	}
	res := f.Results["TCP upload::1"]
	if len(res) != n || res[10] != nil || res[11] == nil || res[60] == nil || res[61] != nil {
		t.Errorf("results of TCP upload::1: null outside the window (2, 12] only")
	}
	ping := f.RawValues["Ping (ms) ICMP"]
	lost := 0
	for _, r := range ping {
		if r["lost"] == true {
			lost++
			if _, ok := r["val"]; ok {
				t.Errorf("a lost probe has a val: %v", r)
			}
		} else if _, ok := r["dur"]; ok {
			t.Errorf("a delay sample has a dur: %v", r)
		}
	}
	if lost != d.series("Ping (ms) ICMP").Lost || lost == 0 {
		t.Errorf("%d lost records, the series counts %d", lost, d.series("Ping (ms) ICMP").Lost)
	}
	meta := m["SERIES_META"].(map[string]any)["TCP upload::1"].(map[string]any)
	if _, mean := meta["MEAN_VALUE"]; meta["UNITS"] != "Mbits/s" || mean || meta["CONG_CONTROL"] != "cubic" {
		t.Errorf("SERIES_META of TCP upload::1: %v", meta)
	}
}

func TestFlentRefuses(t *testing.T) {
	d := synthDoc("tcp_upload", 1)
	d.Run.Test = "rrul_cs8"
	if err := WriteFlent(io.Discard, d); err == nil || !strings.Contains(err.Error(), "a rrul_cs8 run: Flent has no such test") ||
		!strings.Contains(err.Error(), "Flent's cubic_bbr, cubic_cdg") || !strings.Contains(err.Error(), " ping, ") || !strings.Contains(err.Error(), "own custom, l4s_download, l4s_upload, quic_download") {
		t.Errorf("unknown test: %v", err)
	}
	d = synthDoc("tcp_upload", 1)
	d.Flows[0].Series[0].Name = "TCP upload::val"
	if err := WriteFlent(io.Discard, d); err == nil || !strings.Contains(err.Error(), `the key "val"`) {
		t.Errorf("reserved key: %v", err)
	}
	d = synthDoc("tcp_upload", 1)
	d.Run.StepS = 0
	if err := WriteFlent(io.Discard, d); err == nil || !strings.Contains(err.Error(), "step_s") {
		t.Errorf("invalid document: %v", err)
	}
	d = synthDoc("tcp_upload", 1).WithoutSamples()
	if err := WriteFlent(io.Discard, d); !errors.Is(err, ErrNoSamples) {
		t.Errorf("a summary of a run: %v", err)
	}
}

// Flent's figures come from the samples, not from the document's
// summaries: a file written after the samples changed has the new values
// and nothing of the stale summary.
func TestFlentFiguresFromSamples(t *testing.T) {
	d := synthDoc("tcp_upload", 2)
	s := d.series("TCP upload")
	for i := range s.Samples {
		s.Samples[i].V = 7
	}
	var buf bytes.Buffer
	if err := WriteFlent(&buf, d); err != nil {
		t.Fatal(err)
	}
	var f struct {
		Metadata struct {
			SeriesMeta map[string]map[string]any `json:"SERIES_META"`
		} `json:"metadata"`
		RawValues map[string][]map[string]any `json:"raw_values"`
	}
	if err := json.Unmarshal(buf.Bytes(), &f); err != nil {
		t.Fatal(err)
	}
	if m := f.Metadata.SeriesMeta["TCP upload"]; m["MEAN_VALUE"] != nil {
		t.Errorf("SERIES_META of TCP upload: %v, want no MEAN_VALUE", m)
	}
	raw := f.RawValues["TCP upload"]
	for _, r := range raw {
		if r["val"] != 7.0 {
			t.Fatalf("raw value %v, want 7 (the summary says a mean of %v)", r, s.Summary.Mean)
		}
	}
	if len(raw) != s.Summary.N {
		t.Errorf("%d raw values, %d samples in the window", len(raw), s.Summary.N)
	}
}

// A probe answered between lost ones has no value on the grid, which does
// not interpolate across a loss; in the Flent file it stands at its
// nearest grid point inside the window, since Flent computes a figure of 0
// (the standard deviation of one sample) again from the results and fails
// on a series with none there. A series that has grid values keeps them
// alone.
func TestFlentResultsOfALoneProbe(t *testing.T) {
	step := 0.2
	x := make([]float64, 21)
	for k := range x {
		x[k] = GridTime(k, step)
	}
	nan := math.NaN()
	s := &Series{Name: "Ping (ms) ICMP", Unit: "ms", Window: [2]float64{1, 4},
		Samples: []Sample{{0.9, 40}, {1.1, nan}, {2.1, 656}, {2.3, nan}, {3.9, nan}, {4.1, 41}}}
	res := flentResults(s, x, step)
	for k, v := range res {
		switch {
		case k == 11 && (v == nil || *v != 656):
			t.Errorf("results[%d] (%gs) = %v, want the lone probe's 656", k, x[k], v)
		case k != 11 && v != nil:
			t.Errorf("results[%d] (%gs) = %v, want null", k, x[k], *v)
		}
	}
	s.Samples = []Sample{{0.9, 40}, {1.1, 50}, {1.3, 60}, {1.5, nan}, {2.1, 656}, {2.3, nan}}
	res = flentResults(s, x, step)
	if res[6] == nil || math.Abs(*res[6]-55) > 1e-9 || res[10] != nil || res[11] != nil {
		t.Errorf("a series with grid values: results[6] %v, [10] %v, [11] %v; want 55, null, null", res[6], res[10], res[11])
	}
}
