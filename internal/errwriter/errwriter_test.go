package errwriter

import (
	"errors"
	"strings"
	"testing"
)

// failAfter accepts n writes, then fails every one.
type failAfter struct {
	n   int
	got strings.Builder
}

var errFull = errors.New("full")

func (f *failAfter) Write(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errFull
	}
	f.n--
	return f.got.Write(p)
}

func TestKeepsTheFirstError(t *testing.T) {
	f := &failAfter{n: 2}
	w := New(f)
	w.Printf("a%d", 1)
	w.Printf("b")
	if w.Err() != nil {
		t.Fatalf("error %v after writes that succeeded", w.Err())
	}
	w.Printf("c")
	f.n = 5 // the writer would take more now: the first error stays
	w.Printf("d")
	if !errors.Is(w.Err(), errFull) || f.got.String() != "a1b" {
		t.Errorf("err %v, wrote %q; want the first error and a1b", w.Err(), f.got.String())
	}
	if n, err := w.Write([]byte("e")); n != 0 || !errors.Is(err, errFull) {
		t.Errorf("Write after the error: %d, %v", n, err)
	}
}
