package results

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"strconv"
	"strings"
	"wanlab/infile"
	"wanlab/outfile"
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

// Decode reads a document written by Encode or EncodeGzip; it tells the two
// apart by gzip's magic bytes, not by a file name. It refuses input that is
// not a wanlab results document and documents of a newer major version.
// Keys it does not know (from a later minor revision) are ignored, so newer
// files still load; a document decoded and encoded again loses them.
func Decode(r io.Reader) (*Document, error) {
	br := bufio.NewReader(r)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("results: reading gzip: %w", err)
		}
		defer zr.Close()
		r = zr
	} else {
		r = br
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("results: reading: %w", err)
	}
	var head struct {
		Format    *string         `json:"format"`
		Version   *int            `json:"version"`
		XValues   json.RawMessage `json:"x_values"`
		RawValues json.RawMessage `json:"raw_values"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("results: not a wanlab results document (not a JSON object: %v)", err)
	}
	switch {
	case head.Format == nil && head.XValues != nil && head.RawValues != nil:
		return nil, errors.New(`results: this is a Flent data file, not a wanlab results document; open it with "flent -i FILE"`)
	case head.Format == nil:
		return nil, errors.New(`results: not a wanlab results document (no "format" key)`)
	case *head.Format != Format:
		return nil, fmt.Errorf("results: not a wanlab results document (format %q, want %q)", *head.Format, Format)
	case head.Version == nil:
		return nil, errors.New(`results: the document has no "version" key`)
	case *head.Version > Version:
		return nil, fmt.Errorf("results: the document is version %d, newer than this wanlab reads (up to %d); read it with a newer wanlab", *head.Version, Version)
	case *head.Version < 1:
		return nil, fmt.Errorf("results: invalid document version %d", *head.Version)
	}
	var e envelope
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, fmt.Errorf("results: decoding: %w", err)
	}
	return &e.Document, nil
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

// ReadFile reads a document from path, compressed or not; path must be a
// regular file (infile.Open).
func ReadFile(path string) (*Document, error) {
	f, err := infile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d, err := Decode(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return d, nil
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
