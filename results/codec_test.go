package results

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"wanlab/internal/outfile"
)

// nanFree returns a deep copy of d (through JSON, so NaN survives as
// null) with every NaN replaced by a sentinel, so that reflect.DeepEqual
// can compare documents that hold lost probes.
func nanFree(t *testing.T, d *Document) *Document {
	t.Helper()
	c := *d
	c.Series = fixSeries(d.Series)
	c.Flows = make([]Flow, len(d.Flows))
	for i, f := range d.Flows {
		f.Series = fixSeries(f.Series)
		c.Flows[i] = f
	}
	c.Run.Start = c.Run.Start.UTC()
	return &c
}

const nanSentinel = -123456.789

func fixSeries(in []Series) []Series {
	if in == nil {
		return nil
	}
	out := make([]Series, len(in))
	for i, s := range in {
		s.Samples = append(Samples(nil), s.Samples...)
		for j := range s.Samples {
			if math.IsNaN(s.Samples[j].V) {
				s.Samples[j].V = nanSentinel
			}
		}
		sm := &s.Summary
		for _, f := range []*float64{&sm.Total, &sm.Mean, &sm.Median, &sm.Min, &sm.Max, &sm.P90, &sm.P99, &sm.StdDev, &sm.Variance} {
			if math.IsNaN(*f) {
				*f = nanSentinel
			}
		}
		out[i] = s
	}
	return out
}

func fullDoc(t *testing.T) *Document {
	t.Helper()
	d := synthDoc("rrul", 3)
	d.Run.Options = map[string]string{"ping_hosts": "a,b"}
	d.Run.Partial, d.Run.PartialReason = true, "interrupted by SIGINT at 7.2 s"
	d.Run.Start = d.Run.Start.In(time.FixedZone("CET", 3600)) // written in UTC
	d.Router = sampleRouter()
	return d
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	d := fullDoc(t)
	for _, gz := range []bool{false, true} {
		var buf bytes.Buffer
		var err error
		if gz {
			err = d.EncodeGzip(&buf)
		} else {
			err = d.Encode(&buf)
		}
		if err != nil {
			t.Fatal(err)
		}
		if gotGz := bytes.HasPrefix(buf.Bytes(), []byte{0x1f, 0x8b}); gotGz != gz {
			t.Fatalf("gzip %v: output starts % x", gz, buf.Bytes()[:2])
		}
		enc := buf.Bytes()
		back, err := Decode(bytes.NewReader(enc))
		if err != nil {
			t.Fatalf("gzip %v: %v", gz, err)
		}
		if !back.Run.Start.Equal(d.Run.Start) || back.Run.Start.Location() != time.UTC {
			t.Errorf("gzip %v: start %v, want %v in UTC", gz, back.Run.Start, d.Run.Start)
		}
		if !reflect.DeepEqual(nanFree(t, back), nanFree(t, d)) {
			t.Errorf("gzip %v: the decoded document differs from the encoded one", gz)
		}
		if n := back.Series[0].Samples; len(n) == 0 {
			t.Fatal("no samples came back")
		}
		lost := 0
		for _, s := range back.Series {
			for _, p := range s.Samples {
				if p.Lost() {
					lost++
				}
			}
		}
		if lost == 0 {
			t.Error("no lost probe survived the round trip: the test document should hold some")
		}
	}
	// The plain form is JSON with the format and version first.
	var buf bytes.Buffer
	if err := d.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(buf.Bytes(), []byte(`{"format":"wanlab-results","version":2,"run":{`)) {
		t.Errorf("document starts %.60s", buf.Bytes())
	}
	if !bytes.Contains(buf.Bytes(), []byte(`"start":"2026-03-04T05:06:07.123456789Z"`)) {
		t.Error("start is not written in UTC with nanoseconds")
	}
	if !bytes.Contains(buf.Bytes(), []byte(`,null]`)) {
		t.Error("lost probes are not written as null values")
	}
}

func TestWriteFileReadFile(t *testing.T) {
	d := fullDoc(t)
	dir := t.TempDir()
	for _, name := range []string{"run.json.gz", "run.json"} {
		path := filepath.Join(dir, name)
		if err := WriteFile(context.Background(), path, d, outfile.Options{}); err != nil {
			t.Fatal(err)
		}
		raw, _ := os.ReadFile(path)
		if gz := bytes.HasPrefix(raw, []byte{0x1f, 0x8b}); gz != strings.HasSuffix(name, ".gz") {
			t.Errorf("%s: gzip %v", name, gz)
		}
		back, err := ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(nanFree(t, back), nanFree(t, d)) {
			t.Errorf("%s: the document read back differs", name)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("the directory holds %d files; temporary files were left behind", len(entries))
	}
}

func TestDecodeRejects(t *testing.T) {
	flent, _ := json.Marshal(map[string]any{"version": 4, "x_values": []float64{0}, "results": map[string]any{}, "raw_values": map[string]any{}, "metadata": map[string]any{}})
	cases := []struct {
		name, input, want string
	}{
		{"newer major version", `{"format":"wanlab-results","version":3,"run":{"test":"rrul"},"series":{"changed":"shape"}}`,
			"version 3, newer than this wanlab reads (up to 2)"},
		{"no version", `{"format":"wanlab-results","run":{}}`, `no "version" key`},
		{"other format", `{"format":"something-else","version":1}`, `format "something-else"`},
		{"Flent file", string(flent), "Flent data file"},
		{"no format", `{"run":{}}`, `no "format" key`},
		{"not JSON", `PK\x03\x04`, "not a JSON object"},
		{"bad sample", `{"format":"wanlab-results","version":1,"series":[{"name":"x","samples":[[null,1]]}]}`, "sample 0"},
	}
	for _, c := range cases {
		_, err := Decode(strings.NewReader(c.input))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	// A gzip stream is recognised by its magic bytes, whatever its name.
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(cases[0].input))
	zw.Close()
	if _, err := Decode(&buf); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Errorf("gzipped newer version: %v", err)
	}
}

// Unknown keys, as a later minor revision might add them at any level, are
// ignored: the known ones still load.
func TestDecodeIgnoresUnknownKeys(t *testing.T) {
	in := `{"format":"wanlab-results","version":1,"added_later":{"x":1},
	 "run":{"test":"ping","step_s":0.5,"framing":"ip","new_knob":true},
	 "series":[{"name":"Ping (ms) ICMP","unit":"ms","window":[0,2],"lost":1,"colour":"red",
	   "summary":{"n":2,"mean":3,"p999":9},"samples":[[0.5,2,"extra"],[1,null],[1.5,4]]}],
	 "flows":[{"id":1,"label":"Ping (ms) ICMP","protocol":"icmp","dscp_name":"CS0"}]}`
	d, err := Decode(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	s := d.Series[0]
	if d.Run.Test != "ping" || d.Run.StepS != 0.5 || d.Run.Framing != "ip" || s.Name != "Ping (ms) ICMP" ||
		s.Lost != 1 || s.Summary.N != 2 || s.Summary.Mean != 3 || !math.IsNaN(s.Summary.Median) ||
		len(s.Samples) != 3 || s.Samples[0] != (Sample{0.5, 2}) || !s.Samples[1].Lost() ||
		d.Flows[0].Protocol != "icmp" {
		t.Errorf("decoded %+v", d)
	}
}

func TestSummaryOfNoDataIsNull(t *testing.T) {
	b, err := json.Marshal(Summary{})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"n":0,"total":null,"mean":null,"median":null,"min":null,"max":null,"stddev":null,"variance":null,"p90":null,"p99":null}`
	if string(b) != want {
		t.Errorf("zero summary: %s", b)
	}
}

func TestSamplesRejectInfinity(t *testing.T) {
	if _, err := json.Marshal(Samples{{1, math.Inf(1)}}); err == nil {
		t.Error("an infinite value was encoded")
	}
	b, err := json.Marshal(Samples{{0, 1e-9}, {0.2, 3}, {1e22, math.NaN()}})
	if err != nil || string(b) != `[[0,1e-09],[0.2,3],[1e+22,null]]` {
		t.Errorf("samples: %s, %v", b, err)
	}
}

// FuzzDecode: Decode never panics, and what it accepts encodes and decodes
// again.
func FuzzDecode(f *testing.F) {
	var buf bytes.Buffer
	synthDoc("tcp_upload", 1).Encode(&buf)
	f.Add(buf.Bytes())
	f.Add([]byte(`{"format":"wanlab-results","version":1,"series":[{"name":"a","samples":[[0,null]]}]}`))
	f.Add([]byte(`{"format":"wanlab-results","version":3}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Decode(bytes.NewReader(data))
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := d.Encode(&out); err != nil {
			t.Fatalf("a decoded document does not encode: %v", err)
		}
		if _, err := Decode(&out); err != nil {
			t.Fatalf("an encoded document does not decode: %v", err)
		}
	})
}
