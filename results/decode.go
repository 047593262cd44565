package results

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"reflect"
	"strings"

	"wanlab/internal/infile"
)

// MaxText bounds a results document's JSON text, after decompression. A
// 1-hour rrul run at the default 0.2 s step writes about 60 MB of it (12
// series, and 8 flows with 25 series each, 18 000 samples apiece), so the
// bound holds about four hours of rrul; a small file that decompresses
// without end (a decompression bomb) is refused once this much is read,
// long before memory runs out.
const MaxText = 256 << 20

// limits bound what Decode reads and what the text decodes to. The text's
// bound alone is not enough: small JSON values decode to much larger Go
// values ("{}," is a Series of 160 bytes, "[0,0]," a sample of 16), so
// every value decoded whole has a bound of its own and the lists' elements
// are counted.
type limits struct {
	// text bounds the whole text (MaxText).
	text int64
	// series bounds one series' text: a run of testrun's largest grid (10⁶
	// points) writes about 25 MB for its longest series.
	series int64
	// value bounds any other value decoded whole: the run's provenance, a
	// flow's fields, a command with its output (at most 256 KiB), the
	// router's report.
	value int64
	// elements bounds the series, flows and commands of a document, the
	// flows' own series included: the router tracks at most 16 384 flows,
	// each with a few series of its own.
	elements int
	// samples bounds the samples of all series, 16 bytes each in memory
	// and as few as 6 in the text ("[0,0],"): a 1-hour rrul run has about
	// 3 million.
	samples int
}

// decodeLimits are the limits Decode applies; tests lower them.
var decodeLimits = limits{text: MaxText, series: 64 << 20, value: 16 << 20, elements: 1 << 20, samples: 1 << 24}

var (
	// ErrTooLarge is a document beyond Decode's bounds: more than MaxText
	// of JSON, or a value or a number of series far beyond what a run
	// writes.
	ErrTooLarge = errors.New("results: document too large")
	// ErrNewer is a document of a later major version than Version.
	ErrNewer = errors.New("results: document of a newer version")
)

// kindError is an error with its own message that errors.Is matches
// against a sentinel (ErrTooLarge, ErrNewer).
type kindError struct {
	kind error
	msg  string
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

// tooLarge is an ErrTooLarge with its message.
func tooLarge(format string, args ...any) error {
	return &kindError{ErrTooLarge, fmt.Sprintf(format, args...)}
}

// FormatError is a JSON document whose "format" key names something other
// than a results document, such as an experiment's index.
type FormatError struct{ Format string }

func (e *FormatError) Error() string {
	return fmt.Sprintf("results: not a wanlab results document (format %q, want %q)", e.Format, Format)
}

// Decode reads a document written by Encode or EncodeGzip; it tells the two
// apart by gzip's magic bytes, not by a file name. It refuses input that is
// not a wanlab results document and documents of a newer major version
// (ErrNewer), and stops reading, refusing the input (ErrTooLarge), past
// MaxText bytes of JSON. Keys it does not know (from a later minor
// revision) are ignored, so newer files still load; a document decoded and
// encoded again loses them.
//
// The text is decoded as it streams in, one series or flow at a time, so
// that memory holds the document and not its text as well; "format" and
// "version", which Encode writes first, are checked before anything else is
// decoded. Decode does not check the document's content: ReadFile does.
func Decode(r io.Reader) (*Document, error) {
	br := bufio.NewReader(r)
	var src io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("results: reading gzip: %w", err)
		}
		defer zr.Close()
		src = zr
	}
	in := &textReader{r: src, left: decodeLimits.text, stop: math.MaxInt64}
	s := &stream{dec: json.NewDecoder(in), in: in, lim: decodeLimits}
	d, err := s.document()
	var syn *json.SyntaxError
	switch {
	case errors.Is(in.err, ErrTooLarge):
		return nil, tooLarge("results: more than %s of JSON once decompressed, the most wanlab reads (a 1-hour rrul run at --step 0.2s writes about 60 MB): "+
			"it is not a results file of wanlab's, or one of a run longer than about four hours at that step, which needs a longer --step", infile.Size(decodeLimits.text))
	case errors.Is(in.err, io.ErrUnexpectedEOF), errors.Is(err, io.ErrUnexpectedEOF), err == io.EOF:
		return nil, errors.New("results: the file is cut short (it ends inside the document)")
	case in.err != nil:
		return nil, fmt.Errorf("results: reading: %w", in.err)
	case errors.As(err, &syn):
		return nil, fmt.Errorf("results: the document is not valid JSON: %v", syn)
	}
	return d, err
}

// textReader passes a document's text to the JSON decoder. It counts the
// text against its bound as decompressed, stops a value decoded whole at
// the value's own bound (stop), and cuts every run of white space outside
// strings to one byte: JSON reads any run as one, and json.Decoder's Token
// and More scan a run again from its start at each read, so that a run of
// a few hundred MB between two keys would take hours.
type textReader struct {
	r io.Reader
	// left is what the text's bound still allows.
	left int64
	// out counts the bytes passed on; stop is where the value being
	// decoded must end.
	out, stop int64
	// err is the first error of r other than io.EOF, or ErrTooLarge.
	err error
	// The scanner's state at the end of the last read.
	inString, escaped, space bool
}

// errValueTooLarge is a value that runs past its stop.
var errValueTooLarge = errors.New("value too large")

func (t *textReader) Read(p []byte) (int, error) {
	for {
		if t.err != nil {
			return 0, t.err
		}
		room := t.stop - t.out
		if room <= 0 {
			return 0, errValueTooLarge
		}
		// One byte past the text's bound says that the text is longer.
		p = p[:min(int64(len(p)), room, t.left+1)]
		n, err := t.r.Read(p)
		if t.left -= int64(n); t.left < 0 {
			t.err = ErrTooLarge
			return 0, t.err
		}
		if err != nil && err != io.EOF {
			t.err = err
		}
		n = t.squeeze(p[:n])
		t.out += int64(n)
		if n > 0 || err != nil {
			return n, err
		}
	}
}

// squeeze cuts the runs of white space outside strings in b to one byte,
// in place, and returns the length left.
func (t *textReader) squeeze(b []byte) int {
	w := 0
	for _, c := range b {
		switch {
		case t.inString:
			switch {
			case t.escaped:
				t.escaped = false
			case c == '\\':
				t.escaped = true
			case c == '"':
				t.inString = false
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if t.space {
				continue
			}
			t.space = true
			b[w] = c
			w++
			continue
		case c == '"':
			t.inString = true
		}
		t.space = false
		b[w] = c
		w++
	}
	return w
}

// stream decodes a document from its text.
type stream struct {
	dec *json.Decoder
	in  *textReader
	lim limits
	// elements and samples count the lists' elements and the series'
	// samples decoded so far.
	elements, samples int
}

// document decodes the top-level object key by key, checking the format
// and the version as soon as they come.
func (s *stream) document() (*Document, error) {
	if tok, err := s.dec.Token(); err != nil || tok != json.Delim('{') {
		what := fmt.Sprint(err)
		switch {
		case err == io.EOF:
			what = "the file is empty"
		case err == nil:
			what = fmt.Sprintf("it begins with %v", tok)
		}
		return nil, fmt.Errorf("results: not a wanlab results document (not a JSON object: %s)", what)
	}
	var (
		d                          Document
		format                     *string
		version                    *int
		hasRun, xValues, rawValues bool
		// router is the router's report as text, read once the
		// version, which says its units, is known.
		router json.RawMessage
	)
	err := s.fields(reflect.ValueOf(&d).Elem(), func(key string) (bool, error) {
		if strings.EqualFold(key, "router") {
			if err := s.leaf(&router, s.lim.value); err != nil {
				return true, at(key, err)
			}
			return true, nil
		}
		switch key {
		case "format":
			if err := s.leaf(&format, s.lim.value); err != nil {
				return true, err
			}
			if format != nil && *format != Format {
				return true, &FormatError{*format}
			}
			return true, nil
		case "version":
			if err := s.leaf(&version, s.lim.value); err != nil {
				return true, err
			}
			// A Flent data file has a "version" too: judge it only as a
			// results document's.
			if format != nil {
				return true, checkVersion(version)
			}
			return true, nil
		case "x_values":
			xValues = true
		case "raw_values":
			rawValues = true
		}
		hasRun = hasRun || strings.EqualFold(key, "run")
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	if tok, err := s.dec.Token(); err != io.EOF {
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("results: the file goes on after the document's end (with %v)", tok)
	}
	switch {
	case format == nil && xValues && rawValues:
		return nil, errors.New(`results: this is a Flent data file, not a wanlab results document; open it with "flent -i FILE"`)
	case format == nil:
		return nil, errors.New(`results: not a wanlab results document (no "format" key)`)
	}
	if err := checkVersion(version); err != nil {
		return nil, err
	}
	if !hasRun {
		return nil, errors.New(`results: the document has no "run" key: it is not a whole results document`)
	}
	if len(router) > 0 {
		if d.Router, err = decodeRouter(router, *version); err != nil {
			return nil, at("router", err)
		}
	}
	return &d, nil
}

// checkVersion refuses a missing, invalid or newer version.
func checkVersion(v *int) error {
	switch {
	case v == nil:
		return errors.New(`results: the document has no "version" key`)
	case *v > Version:
		return &kindError{ErrNewer, fmt.Sprintf("results: the document is version %d, newer than this wanlab reads (up to %d); read it with a newer wanlab", *v, Version)}
	case *v < 1:
		return fmt.Errorf("results: invalid document version %d", *v)
	}
	return nil
}

// fields decodes the rest of an object, whose '{' is read, into the
// struct v, key by key as encoding/json matches them (the field's tag,
// else case-insensitively; unknown keys are skipped). head, if not nil,
// sees each key first and says whether it took the value itself.
func (s *stream) fields(v reflect.Value, head func(key string) (bool, error)) error {
	for s.dec.More() {
		tok, err := s.dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		if head != nil {
			took, err := head(key)
			if err != nil {
				return err
			}
			if took {
				continue
			}
		}
		f := structField(v, key)
		if !f.IsValid() {
			var skip discard
			err = s.leaf(&skip, s.lim.series)
		} else {
			err = s.value(f)
		}
		if err != nil {
			return at(key, err)
		}
	}
	_, err := s.dec.Token() // the closing brace
	return err
}

var (
	seriesType      = reflect.TypeFor[Series]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
)

// value decodes the next value into v: a list of structs one element at a
// time, a struct with such a list (a flow) key by key, anything else
// whole with its text bounded.
func (s *stream) value(v reflect.Value) error {
	t := v.Type()
	switch {
	case streamedList(t):
		return s.list(v)
	case t.Kind() == reflect.Struct && hasStreamedList(t):
		tok, err := s.dec.Token()
		switch {
		case err != nil:
			return err
		case tok == nil:
			return nil // null leaves a struct as it is
		case tok != json.Delim('{'):
			return fmt.Errorf("want an object, not %v", tok)
		}
		return s.fields(v, nil)
	case t == seriesType:
		series := v.Addr().Interface().(*Series)
		if err := s.leaf(series, s.lim.series); err != nil {
			return err
		}
		if s.samples += len(series.Samples); s.samples > s.lim.samples {
			return tooLarge("results: more than %d samples, far more than a run writes (a 1-hour rrul run at --step 0.2s has about 3 million): it is not a results file of wanlab's", s.lim.samples)
		}
		return nil
	}
	return s.leaf(v.Addr().Interface(), s.lim.value)
}

// list decodes a JSON array into the slice v, element by element.
func (s *stream) list(v reflect.Value) error {
	tok, err := s.dec.Token()
	switch {
	case err != nil:
		return err
	case tok == nil:
		v.SetZero()
		return nil
	case tok != json.Delim('['):
		return fmt.Errorf("want a list, not %v", tok)
	}
	v.Set(reflect.MakeSlice(v.Type(), 0, 0))
	for i := 0; s.dec.More(); i++ {
		if s.elements++; s.elements > s.lim.elements {
			return tooLarge("results: more than %d series, flows and commands, far more than a run writes: it is not a results file of wanlab's", s.lim.elements)
		}
		e := reflect.New(v.Type().Elem()).Elem()
		if err := s.value(e); err != nil {
			return at(fmt.Sprintf("[%d]", i), err)
		}
		v.Set(reflect.Append(v, e))
	}
	_, err = s.dec.Token() // the closing bracket
	return err
}

// leaf decodes the next value whole into p, refusing one whose text is
// longer than limit.
func (s *stream) leaf(p any, limit int64) error {
	s.in.stop = s.dec.InputOffset() + limit
	defer func() { s.in.stop = math.MaxInt64 }()
	err := s.dec.Decode(p)
	if errors.Is(err, errValueTooLarge) {
		// at names the value.
		return &pathError{err: tooLarge("more than %s of JSON, far more than a run writes there: it is not a results file of wanlab's", infile.Size(limit))}
	}
	return err
}

// streamedList reports whether t is a list decoded element by element: a
// slice of structs without a decoder of its own (not Samples).
func streamedList(t reflect.Type) bool {
	return t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct && !reflect.PointerTo(t).Implements(unmarshalerType)
}

// hasStreamedList reports whether the struct t has a field that is a
// streamed list, and so is decoded key by key.
func hasStreamedList(t reflect.Type) bool {
	for i := 0; i < t.NumField(); i++ {
		if streamedList(t.Field(i).Type) {
			return true
		}
	}
	return false
}

// structField returns the field of the struct v that a JSON key names, as
// encoding/json matches it: its tag's name, else case-insensitively. The
// Value is invalid for a key v does not have.
func structField(v reflect.Value, key string) reflect.Value {
	folded := -1
	for i := 0; i < v.NumField(); i++ {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		if name == key {
			return v.Field(i)
		}
		if folded < 0 && strings.EqualFold(name, key) {
			folded = i
		}
	}
	if folded < 0 {
		return reflect.Value{}
	}
	return v.Field(folded)
}

// discard takes any JSON value and keeps nothing of it.
type discard struct{}

func (*discard) UnmarshalJSON([]byte) error { return nil }

// pathError is an error in the value at a path of keys and indexes
// ("flows[3].series[0]").
type pathError struct {
	path string
	err  error
}

func (e *pathError) Error() string { return fmt.Sprintf("results: decoding %s: %v", e.path, e.err) }
func (e *pathError) Unwrap() error { return e.err }

// at puts err in the value at step (a key, or an index as "[i]") of the
// path, unless it is an error of the whole document (bad JSON, the end of
// the file, a bound).
func at(step string, err error) error {
	var syn *json.SyntaxError
	var kind *kindError
	var fe *FormatError
	var pe *pathError
	switch {
	case errors.As(err, &pe):
	case err == io.EOF, errors.Is(err, io.ErrUnexpectedEOF), errors.As(err, &syn), errors.As(err, &kind), errors.As(err, &fe):
		return err
	}
	if pe != nil {
		if pe.path != "" && !strings.HasPrefix(pe.path, "[") {
			step += "."
		}
		return &pathError{step + pe.path, pe.err}
	}
	return &pathError{step, err}
}

// ReadFile reads the results document at path, compressed or not, and
// checks it (Validate): the one way wanlab reads a results file. path must
// be a regular file (infile.Open), and its JSON text at most MaxText bytes
// once decompressed. Errors name the path.
func ReadFile(path string) (*Document, error) {
	f, err := infile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d, err := Decode(f)
	if err == nil {
		err = d.Validate()
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return d, nil
}

// NotRun reports whether err, from ReadFile, says that the file holds no
// run: it does not exist, or it is not a whole results document (cut
// short, damaged, not JSON, not a regular file, of another format, or
// failing Validate). A view of several runs (a table, a merge, a report or
// graph of a directory) counts such a file as a run not made and goes on:
// the results files decide (docs/experiments.md). The other errors stop
// those views, since going on would hide or lose a whole run: a document
// of a newer version (ErrNewer) or beyond Decode's bounds (ErrTooLarge),
// and a file that could not be opened or read (permission, I/O).
func NotRun(err error) bool {
	var pe *fs.PathError
	switch {
	case err == nil, errors.Is(err, ErrNewer), errors.Is(err, ErrTooLarge):
		return false
	case errors.Is(err, fs.ErrNotExist):
		return true
	case errors.As(err, &pe):
		return false
	}
	return true
}
