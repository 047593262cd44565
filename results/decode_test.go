package results

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// gzipMember compresses text as one gzip member. Members concatenated are
// one gzip stream of their texts concatenated, as gzip -c a b > c makes:
// a bomb of any size costs the test a few KiB per MiB.
func gzipMember(t *testing.T, text []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	zw.Write(text)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// bomb is a gzip stream of head, then filler repeated n times, then tail.
func bomb(t *testing.T, head, filler string, n int, tail string) []byte {
	t.Helper()
	out := gzipMember(t, []byte(head))
	m := gzipMember(t, []byte(filler))
	for range n {
		out = append(out, m...)
	}
	return append(out, gzipMember(t, []byte(tail))...)
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

const bombHead = `{"format":"wanlab-results","version":1,"run":{"test":"ping","step_s":0.2,"framing":"ip"},`

// TestDecodeBombAtMaxText: 300 MiB of JSON in 1.3 MB of gzip (white space
// between two keys, which JSON allows) is refused, naming the bound and
// the file's size, after reading no more than MaxText of it, and without
// holding it: it used to be read whole (twice its size in memory), and
// json.Decoder alone rescans such a run of spaces at every read.
func TestDecodeBombAtMaxText(t *testing.T) {
	const mib = 1 << 20
	data := bomb(t, bombHead, strings.Repeat(" ", mib), MaxText/mib+44, `"series":[]}`)
	var err error
	start := time.Now()
	alloc := allocated(func() { _, err = Decode(bytes.NewReader(data)) })
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "more than 256 MiB of JSON once decompressed") ||
		!strings.Contains(err.Error(), "a longer --step") {
		t.Errorf("a %d MiB document in %d KiB of gzip: %v", MaxText/mib+44, len(data)>>10, err)
	}
	if alloc > 32*mib {
		t.Errorf("decoding it allocated %d MiB", alloc/mib)
	}
	t.Logf("%d KiB of gzip refused in %v, %d KiB allocated", len(data)>>10, time.Since(start), alloc>>10)
}

// TestDecodeBounds: with the bounds lowered, each way of making a small
// text decode to a large document is refused, having allocated a small
// multiple of the bound: a long text, one long value (a series of many
// samples, a long string, an unknown key's value), a long list of small
// elements ("{}" decodes to a Series of 160 bytes), many samples ("[0,0],"
// decodes to 16 bytes), white space.
func TestDecodeBounds(t *testing.T) {
	saved := decodeLimits
	defer func() { decodeLimits = saved }()
	decodeLimits = limits{text: 4 << 20, series: 1 << 20, value: 64 << 10, elements: 1000, samples: 200000}
	cases := []struct {
		name, head, filler string
		n                  int
		tail, want         string
	}{
		{"text", bombHead + `"series":[`, `{"name":"` + strings.Repeat("x", 500000) + `"},`, 10, `{}]}`, "more than 4 MiB of JSON once decompressed"},
		{"series", bombHead + `"series":[{"name":"x","samples":[`, "[0,0],", 400000, `[0,0]]}]}`, "decoding series[0]: more than 1 MiB of JSON"},
		{"flow series", bombHead + `"flows":[{"id":1,"series":[{"samples":[`, "[0,0],", 400000, `[0,0]]}]}]}`, "decoding flows[0].series[0]: more than 1 MiB"},
		{"string", bombHead[:len(bombHead)-2] + `,"title":"`, "x", 100000, `"}}`, "decoding run.title: more than 64 KiB of JSON"},
		{"unknown key", bombHead + `"later":[`, "0,", 600000, `0]}`, "decoding later: more than 1 MiB"},
		{"elements", bombHead + `"series":[`, "{},", 100000, `{}]}`, "more than 1000 series, flows and commands"},
		{"flows' elements", bombHead + `"flows":[{"series":[`, "{},", 100000, `{}]}]}`, "more than 1000 series, flows and commands"},
		{"spaces", bombHead, " ", 8 << 20, `"series":[]}`, "more than 4 MiB of JSON"},
		{"samples", bombHead + `"series":[`, `{"samples":[` + strings.Repeat("[0,0],", 100000) + `[0,0]]},`, 3, `{}]}`, "more than 200000 samples"},
	}
	for _, c := range cases {
		var err error
		data := bomb(t, c.head, strings.Repeat(c.filler, c.n), 1, c.tail)
		alloc := allocated(func() { _, err = Decode(bytes.NewReader(data)) })
		if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrTooLarge with %q", c.name, err, c.want)
		}
		if alloc > 16<<20 {
			t.Errorf("%s: decoding allocated %d KiB", c.name, alloc>>10)
		}
	}
	// Within the bounds, the same shapes decode.
	ok := bombHead + `"series":[{"name":"a","samples":[` + strings.Repeat("[0,1],", 1000) + `[0,1]]}]` + strings.Repeat(" ", 1<<20) + "}"
	if d, err := Decode(strings.NewReader(ok)); err != nil || len(d.Series[0].Samples) != 1001 {
		t.Errorf("a document within the bounds: %v", err)
	}
}

// TestDecodeCutShort: a document cut anywhere is refused as cut short or
// as not a document, never read as a smaller one.
func TestDecodeCutShort(t *testing.T) {
	var plain, gz bytes.Buffer
	d := synthDoc("tcp_upload", 1)
	d.Encode(&plain)
	d.EncodeGzip(&gz)
	for _, whole := range [][]byte{plain.Bytes(), gz.Bytes()} {
		for _, n := range []int{1, 10, len(whole) / 2, len(whole) - 3} {
			_, err := Decode(bytes.NewReader(whole[:n]))
			if err == nil {
				t.Errorf("%d of %d bytes decoded", n, len(whole))
			} else if n > 20 && !strings.Contains(err.Error(), "cut short") {
				t.Errorf("%d of %d bytes: %v", n, len(whole), err)
			}
		}
	}
}

// TestReadFileChecks: ReadFile is the one reader of results files, and
// refuses what every view refuses: a document without a run (show printed
// it as a run of year 1 and exited 0, where plot refused it), one that
// fails Validate, one cut short, one of another format, a directory.
func TestReadFileChecks(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(text), 0o644)
		return p
	}
	for _, c := range []struct {
		path, want string
		notRun     bool
	}{
		{write("norun.json", `{"format":"wanlab-results","version":1}`), `norun.json: results: the document has no "run" key`, true},
		{write("invalid.json", `{"format":"wanlab-results","version":1,"run":{"test":"ping","step_s":0}}`), "run.step_s is 0", true},
		{write("cut.json", `{"format":"wanlab-results","version":1,"run":{"te`), "cut.json: results: the file is cut short", true},
		{write("index.json", `{"format":"wanlab-experiment","version":1}`), `format "wanlab-experiment"`, true},
		{write("newer.json", `{"format":"wanlab-results","version":3}`), "newer than this wanlab reads", false},
		{filepath.Join(dir, "missing.json.gz"), "no such file", true},
		{dir, "is a directory", true},
	} {
		// NotRun says which a view of many runs counts as a run not made,
		// and which stop it.
		if _, err := ReadFile(c.path); err == nil || !strings.Contains(err.Error(), c.want) || NotRun(err) != c.notRun {
			t.Errorf("ReadFile(%s) = %v (NotRun %v); want %q, NotRun %v", c.path, err, NotRun(err), c.want, c.notRun)
		}
	}
	if err := tooLarge("x"); NotRun(err) || NotRun(fmt.Errorf("p: %w", err)) {
		t.Error("a document beyond the bounds counts as not run")
	}
	var fe *FormatError
	if _, err := ReadFile(filepath.Join(dir, "index.json")); !errors.As(err, &fe) || fe.Format != "wanlab-experiment" {
		t.Errorf("another format: %v", err)
	}
}
