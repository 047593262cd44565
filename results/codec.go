package results

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"wanlab/internal/outfile"
)

// envelope is the document as written: the format and version keys first,
// then the document's own keys.
type envelope struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	Document
}

// Encode writes the document as JSON (one line, no indentation: a run's
// samples run to tens of thousands of numbers). Start is written in UTC.
// It does not check the document; see Validate.
func (d *Document) Encode(w io.Writer) error {
	e := envelope{Format: Format, Version: Version, Document: *d}
	e.Run.Start = e.Run.Start.UTC()
	b, err := json.Marshal(&e)
	if err != nil {
		return fmt.Errorf("results: encoding: %w", err)
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

// EncodeGzip writes the document as Encode does, gzip-compressed.
func (d *Document) EncodeGzip(w io.Writer) error {
	zw := gzip.NewWriter(w)
	if err := d.Encode(zw); err != nil {
		return err
	}
	return zw.Close()
}

// WriteFile writes the document to path through outfile (see its rules for
// devices, FIFOs, links, "-" and existing files), gzip-compressed when the
// name ends in ".gz" (the usual name is TEST-TIME.json.gz).
func WriteFile(ctx context.Context, path string, d *Document, o outfile.Options) error {
	return writeOut(ctx, path, o, func(w io.Writer) error {
		if strings.HasSuffix(path, ".gz") {
			return d.EncodeGzip(w)
		}
		return d.Encode(w)
	})
}

// writeOut writes path with write, through outfile.
func writeOut(ctx context.Context, path string, o outfile.Options, write func(io.Writer) error) error {
	f, err := outfile.Create(ctx, path, o)
	if err != nil {
		return err
	}
	defer f.Abort()
	if err := write(f); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Commit()
}

// Samples is a series' samples; in JSON each is a two-element array
// [t, value] with null for a lost probe's value.
type Samples []Sample

// MarshalJSON writes [[t, v], ...].
func (ss Samples) MarshalJSON() ([]byte, error) {
	if ss == nil {
		return []byte("[]"), nil
	}
	b := make([]byte, 0, 2+len(ss)*16)
	b = append(b, '[')
	for i, s := range ss {
		if math.IsNaN(s.T) || math.IsInf(s.T, 0) {
			return nil, fmt.Errorf("sample %d: time %v is not a number", i, s.T)
		}
		if math.IsInf(s.V, 0) {
			return nil, fmt.Errorf("sample %d at %gs: value %v is not a number", i, s.T, s.V)
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = appendFloat(b, s.T)
		b = append(b, ',')
		b = appendFloat(b, s.V)
		b = append(b, ']')
	}
	return append(b, ']'), nil
}

// UnmarshalJSON reads [[t, v], ...]; a null value is a lost probe (NaN).
// Elements after the second are ignored, for later versions.
func (ss *Samples) UnmarshalJSON(data []byte) error {
	if out, ok := parseSamples(data); ok {
		*ss = out
		return nil
	}
	// Anything parseSamples does not take (a third element, a value that
	// is not a number) goes the general way, which also says what is
	// wrong.
	var raw [][]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return fmt.Errorf("samples: want [[t, value], ...]: %w", err)
	}
	out := make(Samples, len(raw))
	for i, p := range raw {
		if len(p) < 2 {
			return fmt.Errorf("sample %d: want [t, value]", i)
		}
		var t, v *float64
		if err := json.Unmarshal(p[0], &t); err != nil || t == nil {
			return fmt.Errorf("sample %d: the time %s is not a number", i, p[0])
		}
		if err := json.Unmarshal(p[1], &v); err != nil {
			return fmt.Errorf("sample %d at %gs: the value %s is not a number or null", i, *t, p[1])
		}
		out[i] = Sample{T: *t, V: math.NaN()}
		if v != nil {
			out[i].V = *v
		}
	}
	*ss = out
	return nil
}

// parseSamples reads the usual form of samples, [[t, v], ...] with
// numbers and null values only, without allocating more than the result:
// a run's file holds millions of samples, and the general way costs
// several allocations each. ok is false for anything else.
func parseSamples(data []byte) (out Samples, ok bool) {
	p := sampleParser{b: data}
	if !p.next('[') {
		return nil, false
	}
	// Each sample opens one bracket: the count, when every one is [t, v].
	out = make(Samples, 0, max(bytes.Count(data, []byte{'['})-1, 0))
	if p.next(']') {
		return out, p.end()
	}
	for {
		if !p.next('[') {
			return nil, false
		}
		t, ok := p.number()
		if !ok || !p.next(',') {
			return nil, false
		}
		v := math.NaN()
		if !p.literal("null") {
			if v, ok = p.number(); !ok {
				return nil, false
			}
		}
		if !p.next(']') {
			return nil, false
		}
		out = append(out, Sample{T: t, V: v})
		if p.next(']') {
			return out, p.end()
		}
		if !p.next(',') {
			return nil, false
		}
	}
}

// sampleParser scans JSON text for parseSamples.
type sampleParser struct {
	b []byte
	i int
}

func (p *sampleParser) space() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\n' || p.b[p.i] == '\r') {
		p.i++
	}
}

// next consumes c, after white space, if it comes next.
func (p *sampleParser) next(c byte) bool {
	p.space()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// literal consumes word, after white space, if it comes next.
func (p *sampleParser) literal(word string) bool {
	p.space()
	if bytes.HasPrefix(p.b[p.i:], []byte(word)) {
		p.i += len(word)
		return true
	}
	return false
}

// number consumes a finite JSON number.
func (p *sampleParser) number() (float64, bool) {
	p.space()
	j := p.i
	for j < len(p.b) && strings.IndexByte("+-.0123456789eE", p.b[j]) >= 0 {
		j++
	}
	f, err := strconv.ParseFloat(string(p.b[p.i:j]), 64)
	if j == p.i || err != nil {
		return 0, false
	}
	p.i = j
	return f, true
}

// end reports whether only white space is left.
func (p *sampleParser) end() bool {
	p.space()
	return p.i == len(p.b)
}

// appendFloat appends f as a JSON number, or null for NaN, in the shortest
// form that reads back as the same float64.
func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) {
		return append(b, "null"...)
	}
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		return strconv.AppendFloat(b, f, 'e', -1, 64)
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64)
}

// summaryJSON is Summary's JSON form: NaN figures are null.
type summaryJSON struct {
	N        int      `json:"n"`
	Total    *float64 `json:"total"`
	Mean     *float64 `json:"mean"`
	Median   *float64 `json:"median"`
	Min      *float64 `json:"min"`
	Max      *float64 `json:"max"`
	StdDev   *float64 `json:"stddev"`
	Variance *float64 `json:"variance"`
	P90      *float64 `json:"p90"`
	P99      *float64 `json:"p99"`
}

func orNull(f float64) *float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	return &f
}

func orNaN(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// MarshalJSON writes the summary with null for figures that are NaN, and
// for every figure when N is 0 (the zero Summary is "no data").
func (s Summary) MarshalJSON() ([]byte, error) {
	if s.N == 0 {
		return json.Marshal(summaryJSON{})
	}
	return json.Marshal(summaryJSON{
		N: s.N, Total: orNull(s.Total), Mean: orNull(s.Mean), Median: orNull(s.Median),
		Min: orNull(s.Min), Max: orNull(s.Max), StdDev: orNull(s.StdDev),
		Variance: orNull(s.Variance), P90: orNull(s.P90), P99: orNull(s.P99),
	})
}

// UnmarshalJSON reads a summary; null or absent figures become NaN.
func (s *Summary) UnmarshalJSON(data []byte) error {
	var j summaryJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*s = Summary{
		N: j.N, Total: orNaN(j.Total), Mean: orNaN(j.Mean), Median: orNaN(j.Median),
		Min: orNaN(j.Min), Max: orNaN(j.Max), StdDev: orNaN(j.StdDev),
		Variance: orNaN(j.Variance), P90: orNaN(j.P90), P99: orNaN(j.P99),
	}
	return nil
}
