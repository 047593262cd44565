package results

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
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
// cache in a temporary directory, and returns what it printed.
func runFlent(t *testing.T, args ...string) string {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command("flent", args...)
	cmd.Env = append(os.Environ(), "HOME="+home, "MPLCONFIGDIR="+home, "XDG_CACHE_HOME="+home, "XDG_CONFIG_HOME="+home)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("flent %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	// Flent reports most failures on its log and still exits 0.
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "ERROR") || strings.Contains(line, "Traceback") {
			t.Fatalf("flent %s failed:\n%s", strings.Join(args, " "), out)
		}
	}
	return string(out)
}

// parseFlentStats reads `flent -f stats` output: series name → figure name
// ("Data points", "Total", "Median", ...) → value.
func parseFlentStats(t *testing.T, out string) map[string]map[string]float64 {
	t.Helper()
	res := make(map[string]map[string]float64)
	var cur map[string]float64
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == "No data.":
			cur = nil // the series stays in res with no figures
		case strings.HasPrefix(line, "  ") && cur != nil:
			key, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
			if !ok {
				t.Fatalf("flent stats: unexpected line %q", line)
			}
			fields := strings.Fields(rest)
			if len(fields) == 0 {
				t.Fatalf("flent stats: no value in %q", line)
			}
			v, err := strconv.ParseFloat(fields[0], 64)
			if err != nil {
				t.Fatalf("flent stats: %q: %v", line, err)
			}
			cur[key] = v
		case strings.HasPrefix(line, " ") && strings.HasSuffix(line, ":"):
			cur = make(map[string]float64)
			res[strings.TrimSuffix(line[1:], ":")] = cur
		}
	}
	return res
}

// near reports whether got is within 1% of want (or 1e-5 absolute, the
// precision Flent prints).
func near(got, want float64) bool {
	return math.Abs(got-want) <= 0.01*math.Max(math.Abs(got), math.Abs(want))+1e-5
}

// TestFlentStatsMatchSummary writes each of wanlab's Flent tests as a Flent
// data file, has the real flent summarise it, and checks its figures
// against the document's own summary. The lead and tail samples of the
// synthetic documents are 999 (load) and 5 ms (probes), far outside the
// load's values, so a file that let Flent see them would fail here.
func TestFlentStatsMatchSummary(t *testing.T) {
	needFlent(t)
	for _, test := range FlentTests() {
		t.Run(test, func(t *testing.T) {
			d := synthDoc(test, 42)
			path := filepath.Join(t.TempDir(), test+".flent.gz")
			if err := WriteFlentFile(context.Background(), path, d, outfile.Options{}); err != nil {
				t.Fatal(err)
			}
			got := parseFlentStats(t, runFlent(t, "-i", path, "-f", "stats"))
			if len(got) != len(d.Series) {
				t.Errorf("flent lists %d series, the document has %d", len(got), len(d.Series))
			}
			grid := d.GridLen()
			for i := range d.Series {
				s := &d.Series[i]
				f, ok := got[s.Name]
				if !ok {
					t.Errorf("%s: not in flent's stats (or \"No data.\")", s.Name)
					continue
				}
				want := map[string]float64{
					"Mean": s.Summary.Mean, "Median": s.Summary.Median,
					"Min": s.Summary.Min, "Max": s.Summary.Max, "99th %": s.Summary.P99,
					"Std dev": s.Summary.StdDev, "Variance": s.Summary.Variance,
					// MEAN_VALUE is used, so Flent counts the grid slots.
					"Data points": float64(grid),
				}
				if s.IsRate() {
					want["Total"] = s.Summary.Total
				}
				for k, w := range want {
					if g, ok := f[k]; !ok || !near(g, w) {
						t.Errorf("%s: flent's %s is %v (present %v), the summary's %v", s.Name, k, g, ok, w)
					}
				}
				if s.Summary.N < 10 {
					t.Errorf("%s: only %d samples summarised; the synthetic document is broken", s.Name, s.Summary.N)
				}
			}
		})
	}
}

// flentPlots are the plots drawn from each test's file: the test's default
// first, then all_scaled, totals and ping_cdf where Flent 2.1.1's test
// definition has them.
var flentPlots = map[string][]string{
	"ping":              {"ping", "ping_cdf"},
	"tcp_upload":        {"totals", "ping_cdf"},
	"tcp_download":      {"totals", "ping_cdf"},
	"tcp_bidirectional": {"totals", "ping_cdf"},
	"tcp_nup":           {"totals", "ping_cdf"},
	"tcp_ndown":         {"totals", "ping_cdf"},
	"udp_flood":         {"totals", "ping_cdf"},
	"rrul":              {"all_scaled", "totals", "ping_cdf"},
	"rrul_be":           {"all_scaled", "totals", "ping_cdf"},
}

// TestFlentPlots has the real flent draw the plots of flentPlots from our
// files: each must be a non-empty PNG.
func TestFlentPlots(t *testing.T) {
	if len(flentPlots) != len(FlentTests()) {
		t.Fatalf("plots are listed for %d tests, the export knows %d", len(flentPlots), len(FlentTests()))
	}
	needFlent(t)
	pngMagic := []byte("\x89PNG\r\n\x1a\n")
	for _, test := range FlentTests() {
		t.Run(test, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, test+".flent.gz")
			if err := WriteFlentFile(context.Background(), path, synthDoc(test, 7), outfile.Options{}); err != nil {
				t.Fatal(err)
			}
			for _, plot := range flentPlots[test] {
				png := filepath.Join(dir, plot+".png")
				runFlent(t, "-i", path, "-p", plot, "-o", png)
				b, err := os.ReadFile(png)
				if err != nil {
					t.Fatalf("plot %s: %v", plot, err)
				}
				if len(b) < 10000 || !bytes.HasPrefix(b, pngMagic) {
					t.Errorf("plot %s: %d bytes, PNG header %v: not a drawn plot", plot, len(b), bytes.HasPrefix(b, pngMagic))
				}
			}
		})
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
	if meta["UNITS"] != "Mbits/s" || meta["MEAN_VALUE"] != d.series("TCP upload::1").Summary.Mean || meta["CONG_CONTROL"] != "cubic" {
		t.Errorf("SERIES_META of TCP upload::1: %v", meta)
	}
}

func TestFlentRefuses(t *testing.T) {
	d := synthDoc("tcp_upload", 1)
	d.Run.Test = "rrul_var"
	if err := WriteFlent(io.Discard, d); err == nil || !strings.Contains(err.Error(), "wanlab exports runs of ping, rrul") {
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
}

// MEAN_VALUE is the window's mean even when the document's summaries are
// stale (samples changed after Summarize).
func TestFlentMeanIsFresh(t *testing.T) {
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
	}
	if err := json.Unmarshal(buf.Bytes(), &f); err != nil {
		t.Fatal(err)
	}
	if got := f.Metadata.SeriesMeta["TCP upload"]["MEAN_VALUE"]; got != 7.0 {
		t.Errorf("MEAN_VALUE %v, want 7 (the summary says %v)", got, s.Summary.Mean)
	}
}
