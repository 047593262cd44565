package results

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"wanlab/internal/outfile"
)

// flentFileVersion is the data file version Flent 2.1.1 and later write and
// read (FILEFORMAT_VERSION in flent/resultset.py).
const flentFileVersion = 4

// flentTimeLayout is the only time format Flent reads without guessing a
// time zone: UTC with exactly six fractional digits.
const flentTimeLayout = "2006-01-02T15:04:05.000000Z"

// flentRecordKeys are the keys of a raw record that Flent itself reads; a
// flow series may not use them as its key.
var flentRecordKeys = map[string]bool{"t": true, "val": true, "dur": true, "lost": true, "seq": true}

// WriteFlent writes the document as a Flent data file (format version 4,
// plain JSON; WriteFlentFile gzips it), which Flent 2.1.1 and later load
// with `flent -i`, summarise with `-f stats` and plot.
//
// The file carries each series' window only: `results` holds the series
// on the grid (see Grid) with null outside its window, and `raw_values`
// holds its samples inside the window, as {t (unix seconds), val, dur (the
// step, for rate series)}, a lost probe as {t, lost: true}. Flent's
// `-f stats` summarises every raw value it is given, so its figures are
// the document's summary: the same data points, mean, median, minimum,
// maximum, standard deviation, variance and total (Σ val·dur). The file
// has no MEAN_VALUE in SERIES_META: with one, Flent would print it as the
// mean and count every grid point of the run, nulls included, as the data
// points. A flow's own series ("TCP upload BE::tcp_cwnd") become the key
// after "::" inside the records of the flow's series, where Flent's
// per-flow plots (tcp_cwnd, tcp_rtt) look for them.
//
// Flent rebuilds the test's series list from NAME and TEST_PARAMETERS when
// it loads the file, so NAME is a Flent test: the run's own, or for a test
// of wanlab's the one FlentLayout names, its series renamed to that test's
// (TFRC upload as TCP upload); metadata WANLAB records the run's test and
// the renamed series, and TITLE starts with the run's test.
// wanlab's own series (IsWanlabSeries), which no Flent test defines, are
// left out.
func WriteFlent(w io.Writer, d *Document) error {
	f, err := flentFile(d)
	if err != nil {
		return err
	}
	b, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("results: encoding the Flent file: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// WriteFlentFile writes the Flent data file to path, gzip-compressed when
// the name ends in ".gz" (Flent's usual name is TEST-TIME.flent.gz; Flent
// reads a name ending in .gz as gzip and any other name but .bz2 and .flnt
// as plain JSON).
func WriteFlentFile(ctx context.Context, path string, d *Document, o outfile.Options) error {
	return writeOut(ctx, path, o, func(w io.Writer) error {
		if !strings.HasSuffix(path, ".gz") {
			return WriteFlent(w, d)
		}
		zw := gzip.NewWriter(w)
		if err := WriteFlent(zw, d); err != nil {
			return err
		}
		return zw.Close()
	})
}

// CheckFlent says why the document cannot be written as a Flent data
// file, or returns nil: its test must have a FlentLayout, and it must
// have its samples (not be a summary of a run).
func CheckFlent(d *Document) error {
	if _, err := FlentLayout(d.Run.Test); err != nil {
		return err
	}
	return d.NeedSamples()
}

// flentData is Flent's data file.
type flentData struct {
	Version   int                         `json:"version"`
	Metadata  map[string]any              `json:"metadata"`
	XValues   []float64                   `json:"x_values"`
	Results   map[string][]*float64       `json:"results"`
	RawValues map[string][]map[string]any `json:"raw_values"`
}

func flentFile(d *Document) (*flentData, error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	if err := CheckFlent(d); err != nil {
		return nil, fmt.Errorf("results: Flent export: %w", err)
	}
	flentName, _ := FlentLayout(d.Run.Test)
	test := flentTests[flentName]
	rename := flentLayouts[d.Run.Test].rename
	name := func(n string) string {
		if r, ok := rename[n]; ok {
			return r
		}
		return n
	}
	step := d.Run.StepS
	n := d.GridLen()
	// Flent keeps T0 to the microsecond; raw times count from that T0 so
	// that Flent's t - T0 is the document's t.
	t0 := d.Run.Start.UTC().Truncate(time.Microsecond)
	t0Unix := float64(t0.UnixMicro()) / 1e6

	f := &flentData{
		Version:   flentFileVersion,
		XValues:   make([]float64, n),
		Results:   make(map[string][]*float64, len(d.Series)),
		RawValues: make(map[string][]map[string]any, len(d.Series)),
	}
	for k := range f.XValues {
		f.XValues[k] = GridTime(k, step)
	}

	seriesMeta := make(map[string]any, len(d.Series))
	for i := range d.Series {
		s := &d.Series[i]
		if IsWanlabSeries(s.Name) {
			// wanlab's own, not Flent's: its name matches the globs of
			// Flent's rtt_fair sums and plots ("TCP upload*").
			continue
		}
		f.Results[name(s.Name)] = flentResults(s, f.XValues, step)

		raw := make([]map[string]any, 0, len(s.Samples))
		for _, p := range s.Samples {
			if !inWindow(s.Window, p.T) {
				continue
			}
			rec := map[string]any{"t": t0Unix + p.T}
			if p.Lost() {
				rec["lost"] = true
			} else {
				rec["val"] = p.V
				if s.IsRate() {
					rec["dur"] = step
				}
			}
			raw = append(raw, rec)
		}
		f.RawValues[name(s.Name)] = raw
		// No MEAN_VALUE: Flent would print it as the mean and then count
		// the grid's points, nulls included, as the data points; without
		// it both come from the raw values, as every other figure does.
		seriesMeta[name(s.Name)] = map[string]any{"UNITS": s.Unit, "RUNNER": "wanlab"}
	}

	spans := make(map[string][2]float64)
	for i := range d.Flows {
		fl := &d.Flows[i]
		label := name(fl.Label)
		m, ok := seriesMeta[label].(map[string]any)
		if ok && fl.CongestionControl != "" {
			m["CONG_CONTROL"] = fl.CongestionControl
		}
		if fl.Span != nil {
			spans[label] = *fl.Span
			if ok && fl.Direction != "both" {
				// What netperf reports of a flow it ran for 'length'.
				m["ELAPSED_TIME"] = fl.Span[1] - fl.Span[0]
			}
		}
		for j := range fl.Series {
			s := &fl.Series[j]
			key := s.Name[len(fl.Label)+2:]
			if flentRecordKeys[key] {
				return nil, fmt.Errorf("results: Flent export: series %q: the key %q is one of Flent's own record keys; name it differently", s.Name, key)
			}
			mergeRawKey(f.RawValues, label, key, s, t0Unix)
		}
	}

	params := make(map[string]any, len(d.Run.Options)+1)
	for k, v := range d.Run.Options {
		params[k] = v
	}
	for _, c := range test.counts {
		// The test rebuilds one series per stream from this parameter;
		// it has to count the series the file has.
		count := 0
		for i := range d.Series {
			if globMatch(c.glob, name(d.Series[i].Name)) {
				count++
			}
		}
		params[c.param] = strconv.Itoa(count)
	}

	start := t0.Format(flentTimeLayout)
	title := d.Run.Title
	wanlab := map[string]any{
		"test":           d.Run.Test,
		"version":        d.Run.WanlabVersion,
		"argv":           d.Run.Argv,
		"seed":           d.Run.Seed,
		"framing":        d.Run.Framing,
		"path":           d.Run.Path,
		"lead_s":         d.Run.LeadS,
		"tail_s":         d.Run.TailS,
		"partial":        d.Run.Partial,
		"partial_reason": d.Run.PartialReason,
		"sysctls":        d.Run.Sysctls,
		// When each flow was to run, in seconds from T0: Flent's
		// data sets' delay, and delay plus length.
		"spans": spans,
	}
	if flentName != d.Run.Test {
		// Flent's plots name the test by its description (tcp_upload's
		// "TCP upload stream w/ping") and the series by Flent's labels;
		// the title, which they print under it, says what ran.
		title = strings.TrimSuffix(fmt.Sprintf("wanlab %s as Flent's %s: %s", d.Run.Test, flentName, d.Run.Title), ": ")
		series := make(map[string]string, len(rename))
		for from, to := range rename {
			series[to] = from
		}
		wanlab["series"] = series
	}
	// Flent's HOSTS are the servers the test ran to: the rtt_fair tests
	// make a flow pair and a ping per host and name their series after
	// it, so the list has to be the run's servers, in order.
	hosts := flentHosts(d)
	meta := map[string]any{
		"NAME":            flentName,
		"TITLE":           title,
		"TIME":            start,
		"T0":              start,
		"LOCAL_HOST":      "client",
		"HOST":            hosts[0],
		"HOSTS":           hosts,
		"LENGTH":          d.Run.DurationS,
		"TOTAL_LENGTH":    d.Run.TotalS(),
		"STEP_SIZE":       step,
		"DELAY":           d.Run.FlentDelay(),
		"TEST_PARAMETERS": params,
		"SERIES_META":     seriesMeta,
		"KERNEL_RELEASE":  d.Run.KernelRelease,
		"WANLAB":          wanlab,
	}
	if sc, ok := d.Run.Sysctls["client"]; ok {
		meta["SYSCTLS"] = sc
	}
	if d.Run.Partial {
		meta["NOTE"] = "partial run: " + d.Run.PartialReason
	}
	f.Metadata = meta
	return f, nil
}

// flentHosts returns the Flent HOSTS of the document: the servers its
// flows and probes ran to, in order of first appearance, when they name
// them; "server" for a document of one server that names none.
func flentHosts(d *Document) []string {
	var hosts []string
	for i := range d.Flows {
		if h := d.Flows[i].Server; h != "" && !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	if len(hosts) == 0 {
		return []string{"server"}
	}
	return hosts
}

// flentResults returns a series' column of results: its values on the grid
// x (Grid) inside its window, null elsewhere. Flent takes a figure of 0
// from the raw values (the standard deviation of a single sample) as
// missing and computes it again from this column, and fails on a column
// without a value. So a series whose window has samples and no grid value
// (a probe answered between lost ones, which Grid does not interpolate
// across) has each of those samples at its nearest grid point inside the
// window instead, where Flent finds the same figure.
func flentResults(s *Series, x []float64, step float64) []*float64 {
	grid := Grid(s.Samples, step, len(x))
	res := make([]*float64, len(x))
	empty := true
	for k, v := range grid {
		if !math.IsNaN(v) && inWindow(s.Window, x[k]) {
			res[k] = &grid[k]
			empty = false
		}
	}
	if !empty {
		return res
	}
	for _, p := range s.Samples {
		if p.Lost() || !inWindow(s.Window, p.T) {
			continue
		}
		k := int(math.Round(p.T / step))
		for _, c := range []int{k, k + 1, k - 1} {
			if c >= 0 && c < len(x) && inWindow(s.Window, x[c]) {
				v := p.V
				res[c] = &v
				break
			}
		}
	}
	return res
}

// mergeRawKey adds the window samples of s to the raw records of parent
// under key: into the record with the same time when there is one, else as
// a record of its own (which has no val, so Flent's statistics of the
// parent skip it).
func mergeRawKey(raw map[string][]map[string]any, parent, key string, s *Series, t0Unix float64) {
	recs := raw[parent]
	at := make(map[float64]int, len(recs))
	for i, r := range recs {
		at[r["t"].(float64)] = i
	}
	added := false
	for _, p := range s.Samples {
		if !inWindow(s.Window, p.T) || p.Lost() {
			continue
		}
		t := t0Unix + p.T
		if i, ok := at[t]; ok {
			recs[i][key] = p.V
			continue
		}
		at[t] = len(recs)
		recs = append(recs, map[string]any{"t": t, key: p.V})
		added = true
	}
	if added {
		sort.SliceStable(recs, func(i, j int) bool { return recs[i]["t"].(float64) < recs[j]["t"].(float64) })
	}
	raw[parent] = recs
}
