package tfrc

import (
	"bytes"
	"errors"
	"math"
	"testing"
	"time"

	"wanlab/clock"
)

func TestDataRoundTrip(t *testing.T) {
	h := DataHeader{Seq: 1<<40 + 7, Timestamp: clock.Time(123456789012), RTT: 41234 * time.Microsecond}
	b := AppendData([]byte("prefix"), h)
	b = append(b, "payload"...)
	got, payload, err := ParseData(b[6:])
	if err != nil {
		t.Fatal(err)
	}
	if got != h || string(payload) != "payload" {
		t.Errorf("ParseData = %+v %q, want %+v \"payload\"", got, payload, h)
	}
	if len(b) != 6+DataHeaderLen+7 {
		t.Errorf("encoded length %d, want %d", len(b), 6+DataHeaderLen+7)
	}
	// The RTT is carried in whole microseconds and saturates.
	got, _, _ = ParseData(AppendData(nil, DataHeader{RTT: 1500 * time.Nanosecond}))
	if got.RTT != time.Microsecond {
		t.Errorf("RTT 1.5µs comes back as %v, want 1µs", got.RTT)
	}
	got, _, _ = ParseData(AppendData(nil, DataHeader{RTT: 100 * time.Hour}))
	if got.RTT != math.MaxUint32*time.Microsecond {
		t.Errorf("RTT 100h comes back as %v, want the saturated %v", got.RTT, math.MaxUint32*time.Microsecond)
	}
}

func TestFeedbackRoundTrip(t *testing.T) {
	f := Feedback{Seq: 99, Echo: clock.Time(5e9), Delay: 1234567, XRecv: 250000.5, P: 0.0123}
	b := AppendFeedback(nil, f)
	if len(b) != FeedbackLen {
		t.Fatalf("encoded length %d, want %d", len(b), FeedbackLen)
	}
	got, err := ParseFeedback(b)
	if err != nil || got != f {
		t.Errorf("ParseFeedback = %+v, %v; want %+v", got, err, f)
	}
}

func TestDecodersReject(t *testing.T) {
	data := AppendData(nil, DataHeader{Seq: 1})
	fb := AppendFeedback(nil, Feedback{P: 0.5})
	bad := func(b []byte, i int, v byte) []byte {
		c := bytes.Clone(b)
		c[i] = v
		return c
	}
	withField := func(off int, v float64) []byte {
		c := bytes.Clone(fb)
		for i := range 8 {
			c[off+i] = byte(math.Float64bits(v) >> (56 - 8*i))
		}
		return c
	}
	for _, c := range []struct {
		name string
		err  error
		got  error
	}{
		{"short data", ErrShort, second(ParseData(data[:DataHeaderLen-1]))},
		{"short feedback", ErrShort, first(ParseFeedback(fb[:FeedbackLen-1]))},
		{"empty", ErrShort, first(ParseFeedback(nil))},
		{"magic", ErrMagic, first(ParseFeedback(bad(fb, 0, 'X')))},
		{"version", ErrVersion, first(ParseFeedback(bad(fb, 2, 9)))},
		{"feedback as data", ErrType, second(ParseData(fb))},
		{"data as feedback", ErrType, first(ParseFeedback(append(bytes.Clone(data), make([]byte, 40)...)))},
		{"p > 1", ErrField, first(ParseFeedback(withField(36, 1.5)))},
		{"p NaN", ErrField, first(ParseFeedback(withField(36, math.NaN())))},
		{"X_recv < 0", ErrField, first(ParseFeedback(withField(28, -1)))},
		{"X_recv Inf", ErrField, first(ParseFeedback(withField(28, math.Inf(1))))},
		{"t_delay < 0", ErrField, first(ParseFeedback(withField(20, math.Float64frombits(1<<63))))},
	} {
		if !errors.Is(c.got, c.err) {
			t.Errorf("%s: error %v, want %v", c.name, c.got, c.err)
		}
	}
}

func first(_ Feedback, err error) error { return err }

func second(_ DataHeader, _ []byte, err error) error { return err }

// FuzzParseData: decoding never panics, and whatever decodes encodes back
// to the same bytes (the header is fully determined by its fields).
func FuzzParseData(f *testing.F) {
	f.Add(AppendData(nil, DataHeader{Seq: 3, Timestamp: 77, RTT: 40 * time.Millisecond}))
	f.Add([]byte("TF\x01\x01"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, payload, err := ParseData(b)
		if err != nil {
			return
		}
		again := append(AppendData(nil, h), payload...)
		if !bytes.Equal(again, b) {
			t.Fatalf("re-encoding %x gives %x", b, again)
		}
	})
}

// FuzzParseFeedback: decoding never panics, accepted values are in range,
// and they encode back to the packet's bytes.
func FuzzParseFeedback(f *testing.F) {
	f.Add(AppendFeedback(nil, Feedback{Seq: 1, Echo: 2, Delay: 3, XRecv: 4, P: 0.5}))
	f.Add(AppendFeedback(nil, Feedback{}))
	f.Add([]byte("TF\x01\x02"))
	f.Fuzz(func(t *testing.T, b []byte) {
		fb, err := ParseFeedback(b)
		if err != nil {
			return
		}
		if fb.P < 0 || fb.P > 1 || fb.XRecv < 0 || math.IsInf(fb.XRecv, 0) || fb.Delay < 0 {
			t.Fatalf("accepted out-of-range feedback %+v", fb)
		}
		if again := AppendFeedback(nil, fb); !bytes.Equal(again, b[:FeedbackLen]) {
			t.Fatalf("re-encoding %x gives %x", b[:FeedbackLen], again)
		}
	})
}

func BenchmarkEncodeDecode(b *testing.B) {
	buf := make([]byte, 0, 1500)
	b.ReportAllocs()
	for i := range b.N {
		buf = AppendData(buf[:0], DataHeader{Seq: uint64(i), Timestamp: clock.Time(i), RTT: time.Millisecond})
		if _, _, err := ParseData(buf); err != nil {
			b.Fatal(err)
		}
		buf = AppendFeedback(buf[:0], Feedback{Seq: uint64(i), XRecv: 1e6, P: 0.01})
		if _, err := ParseFeedback(buf); err != nil {
			b.Fatal(err)
		}
	}
}
