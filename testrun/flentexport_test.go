package testrun

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"wanlab/catalog"
	"wanlab/internal/outfile"
	"wanlab/results"
)

// synthRun is the document of a run of the catalog's test name with DELAY
// 0.3 s and LENGTH 1.2 s, made without running it: each load flow's
// throughput sampled over its span in the test's schedule (the load, or
// its own), each probe's round trips over the whole run, the values made
// up. What the Flent export makes of the test's layout is what it serves
// to check.
func synthRun(t *testing.T, name string, o catalog.Options) *results.Document {
	t.Helper()
	tt, err := catalog.Lookup(name, o)
	if err != nil {
		t.Fatal(err)
	}
	const step = 0.1
	delay, length := 300*time.Millisecond, 1200*time.Millisecond
	lead, tail, delayS := delay, delay, 0.0
	if tt.Scheduled() {
		lead, tail, delayS = 0, tt.Length(delay, length)-length, delay.Seconds()
	}
	total := (lead + length + tail).Seconds()
	d := &results.Document{Run: results.Run{
		WanlabVersion: "test", Argv: []string{"wanlab", "run", name}, Test: name,
		Start:     time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC),
		DurationS: length.Seconds(), StepS: step, LeadS: lead.Seconds(), TailS: tail.Seconds(), DelayS: delayS,
		Framing: "ethernet", KernelRelease: "test",
	}}
	n := int(math.Round(total / step))
	for i, f := range tt.Flows {
		span := [2]float64{f.Start.At(delay, length).Seconds(), f.Stop.At(delay, length).Seconds()}
		s := results.Series{Name: f.Series, Unit: "Mbits/s", Window: span}
		for k := 1; k <= n; k++ {
			if x := results.GridTime(k, step); x > span[0]+1e-9 && x <= span[1]+1e-9 {
				s.Samples = append(s.Samples, results.Sample{T: x, V: float64(5 + i + k%7)})
			}
		}
		d.Series = append(d.Series, s)
		c, sv := f.Hosts()
		d.Flows = append(d.Flows, results.Flow{ID: i + 1, Label: f.Series, Direction: f.Dir.String(), Protocol: "tcp", CongestionControl: f.CC, Span: &span,
			Client: c.String(), Server: sv.String()})
	}
	load := [2]float64{lead.Seconds(), (lead + length).Seconds()}
	for j, p := range tt.Probes {
		s := results.Series{Name: p.Series, Unit: "ms", Window: load}
		for k := 0; k < n; k++ {
			s.Samples = append(s.Samples, results.Sample{T: results.GridTime(k, step) + 0.013, V: float64(20 + j + k%5)})
		}
		d.Series = append(d.Series, s)
		c, sv := p.Hosts()
		d.Flows = append(d.Flows, results.Flow{ID: len(tt.Flows) + j + 1, Label: p.Series, Direction: "both", Protocol: p.Kind.String(), Span: &[2]float64{0.013, total},
			Client: c.String(), Server: sv.String()})
	}
	if err := d.AddComputed(); err != nil {
		t.Fatal(err)
	}
	d.Summarize()
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	return d
}

// flentFile reads the metadata and the results of a Flent data file.
func flentFile(t *testing.T, path string) (meta map[string]any, res map[string][]*float64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Metadata map[string]any        `json:"metadata"`
		Results  map[string][]*float64 `json:"results"`
	}
	if err := json.NewDecoder(zr).Decode(&f); err != nil {
		t.Fatal(err)
	}
	return f.Metadata, f.Results
}

// flentBlock is a series as `flent -f stats` prints it: its data points
// and the unit of its figures ("" where Flent's test has no such series),
// or no data.
type flentBlock struct {
	points int
	unit   string
	noData bool
}

// flentRead has the installed flent load file and summarise it (flent -i
// FILE -f stats), and returns its series; it fails the test if flent
// fails or logs an error.
func flentRead(t *testing.T, file string) map[string]*flentBlock {
	t.Helper()
	out := runFlentCmd(t, "-i", file, "-f", "stats")
	blocks := map[string]*flentBlock{}
	var cur *flentBlock
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		switch {
		case strings.HasPrefix(line, " ") && !strings.HasPrefix(line, "  ") && strings.HasSuffix(line, ":"):
			cur = &flentBlock{}
			blocks[strings.TrimSuffix(strings.TrimSpace(line), ":")] = cur
		case cur == nil:
		case strings.TrimSpace(line) == "No data.":
			cur.noData = true
		case strings.HasPrefix(line, "  Data points:"):
			cur.points, _ = strconv.Atoi(f[2])
		case strings.HasPrefix(line, "  Min:") && len(f) > 2:
			cur.unit = f[2]
		}
	}
	return blocks
}

// runFlentCmd runs flent with its home in a temporary directory and
// returns its standard output; Flent logs most failures and still exits
// 0, so an ERROR line or a traceback fails the test too.
func runFlentCmd(t *testing.T, args ...string) string {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command("flent", args...)
	cmd.Env = append(os.Environ(), "HOME="+home, "MPLCONFIGDIR="+home, "XDG_CACHE_HOME="+home, "XDG_CONFIG_HOME="+home)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	all := stdout.String() + stderr.String()
	if err != nil || strings.Contains(all, "Traceback") || strings.Contains(all, "\nERROR") || strings.HasPrefix(all, "ERROR") {
		t.Fatalf("flent %s: %v\n%s", strings.Join(args, " "), err, all)
	}
	return stdout.String()
}

// TestFlentReadsMixedTests writes, for one test of each kind of Flent's
// tests of mixed flows, the Flent data file of a run of it, and has the
// installed flent 2.1.1 summarise it: Flent must find every series with
// Flent's own unit (a series it does not define would print none), each
// with the data points of its span, and compute nothing the file lacks.
// For two of them it draws the test's default plot too (all_scaled, of
// three graphs); cmd/wanlab's TestRunSquareWave draws a square wave's
// totals from a real run. The rtt_fair tests' series are named after
// Flent's HOSTS, which the file lists: the run's servers. (TestCatalogMatchesFlent checks every test's
// series against Flent's definitions; Flent takes a few seconds a file.)
func TestFlentReadsMixedTests(t *testing.T) {
	if _, err := exec.LookPath("flent"); err != nil {
		t.Skip("skipped: flent is not installed (apt-get install -y flent)")
	}
	if raceEnabled {
		t.Skip("skipped under the race detector: it runs flent on files, and no code of ours concurrently")
	}
	for name, plot := range map[string]bool{"tcp_1down": false, "tcp_12up": false, "tcp_2up_square": false,
		"cubic_bbr": true, "reno_cubic_westwood_lp": false, "rrul_be_nflows": false, "rrul_var": true,
		"rtt_fair4be": true, "rtt_fair_up": false, "rtt_fair_var_down": false} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			o := catalog.Options{UploadStreams: 2, DownloadStreams: 3, Streams: 2, Servers: 3}
			d := synthRun(t, name, o)
			file := filepath.Join(t.TempDir(), name+".flent.gz")
			if err := results.WriteFlentFile(context.Background(), file, d, outfile.Options{}); err != nil {
				t.Fatal(err)
			}
			blocks := flentRead(t, file)
			// wanlab's own series (the hosts' fairness of the rtt_fair
			// runs) are no Flent test's: the export leaves them out.
			var own int
			for i := range d.Series {
				if name := d.Series[i].Name; results.IsWanlabSeries(name) {
					own++
					if blocks[name] != nil {
						t.Errorf("%s: wanlab's own, yet in the Flent file", name)
					}
				}
			}
			if len(blocks) != len(d.Series)-own {
				t.Errorf("flent prints %d series, the run has %d of Flent's", len(blocks), len(d.Series)-own)
			}
			for i := range d.Series {
				s := &d.Series[i]
				b := blocks[s.Name]
				switch {
				case results.IsWanlabSeries(s.Name):
					// Checked above: not in the file.
				case b == nil:
					t.Errorf("%s: flent prints no such series", s.Name)
				case b.noData:
					t.Errorf("%s: flent finds no data", s.Name)
				case b.unit != s.Unit && !(b.unit == "" && strings.HasSuffix(s.Name, " fairness")) || b.points != s.Summary.N:
					// (The fairness of tcp_nup's flows is Flent 2.3's: 2.1.1
					// prints it without a unit.)
					t.Errorf("%s: flent prints %d data points in %q; the run has %d in %s", s.Name, b.points, b.unit, s.Summary.N, s.Unit)
				}
			}
			if !plot {
				return
			}
			tt, _ := catalog.Lookup(name, o)
			out := filepath.Join(filepath.Dir(file), tt.Plot+".png")
			runFlentCmd(t, "-i", file, "-p", tt.Plot, "-o", out)
			f, err := os.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if cfg, err := png.DecodeConfig(f); err != nil || cfg.Width < 100 {
				t.Errorf("plot %s: %v, %d wide", tt.Plot, err, cfg.Width)
			}
		})
	}
}

// The rrul_N_up_M_down tests are in no Flent release, so Flent cannot
// load their files: the export's structure is checked instead. NAME is the
// test; the file has each flow's and probe's series with values in its
// window only, and the series the pull request's test computes (rrul's).
func TestFlentFileOfRRULUpDown(t *testing.T) {
	for _, name := range catalog.Names() {
		var up, down int
		if _, err := fmt.Sscanf(name, "rrul_%d_up_%d_down", &up, &down); err != nil {
			continue
		}
		d := synthRun(t, name, catalog.Options{})
		file := filepath.Join(t.TempDir(), name+".flent.gz")
		if err := results.WriteFlentFile(context.Background(), file, d, outfile.Options{}); err != nil {
			t.Fatal(err)
		}
		meta, res := flentFile(t, file)
		if meta["NAME"] != name || meta["DELAY"] != 0.3 || meta["LENGTH"] != 1.2 || meta["TOTAL_LENGTH"] != 1.8 {
			t.Errorf("%s: metadata %v", name, meta)
		}
		want := []string{"TCP upload avg", "TCP upload sum", "TCP download avg", "TCP download sum", "TCP totals", "Ping (ms) avg",
			"TCP upload BE", fmt.Sprintf("TCP upload BE%d", up), fmt.Sprintf("TCP download BE%d", down), fmt.Sprintf("Ping (ms) UDP BE%d", down-1), "Ping (ms) ICMP"}
		for _, s := range want {
			if _, ok := res[s]; !ok {
				t.Errorf("%s: no series %q", name, s)
			}
		}
		if len(res) != up+down+down+6 {
			t.Errorf("%s: %d series, want %d flows, %d probes and 6 computed", name, len(res), up+down, down)
		}
		col := res[fmt.Sprintf("TCP download BE%d", down)]
		for k, v := range col {
			x := results.GridTime(k, 0.1)
			if inside := x > 0.3+1e-9 && x <= 1.5+1e-9; inside != (v != nil) {
				t.Errorf("%s: download at %vs: %v", name, x, v)
				break
			}
		}
	}
}
