package results

import (
	"bytes"
	"errors"
	"testing"
)

// A document without its samples keeps every figure a table or a
// comparison reads, is much smaller, survives encoding, and says what it
// is to a view that needs samples.
func TestWithoutSamples(t *testing.T) {
	d := synthDoc("rrul", 1)
	s := d.WithoutSamples()
	if d.Run.SamplesDropped || len(d.Series[0].Samples) == 0 {
		t.Fatal("WithoutSamples changed the original")
	}
	if err := d.NeedSamples(); err != nil {
		t.Errorf("whole document: %v", err)
	}
	var whole, summary bytes.Buffer
	if err := d.Encode(&whole); err != nil {
		t.Fatal(err)
	}
	if err := s.Encode(&summary); err != nil {
		t.Fatal(err)
	}
	back, err := Decode(&summary)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Run.SamplesDropped || !errors.Is(back.NeedSamples(), ErrNoSamples) {
		t.Errorf("decoded summary: samples_dropped %v, NeedSamples %v", back.Run.SamplesDropped, back.NeedSamples())
	}
	if err := back.Validate(); err != nil {
		t.Errorf("a summary is a valid document: %v", err)
	}
	if len(back.Series) != len(d.Series) || len(back.Flows) != len(d.Flows) {
		t.Fatalf("%d series and %d flows, want %d and %d", len(back.Series), len(back.Flows), len(d.Series), len(d.Flows))
	}
	for i := range d.Series {
		a, b := d.Series[i], back.Series[i]
		if len(b.Samples) != 0 || a.Name != b.Name || a.Window != b.Window || a.Summary.N != b.Summary.N || a.Summary.Mean != b.Summary.Mean {
			t.Errorf("series %q: %+v, want the summary of %+v without samples", a.Name, b.Summary, a.Summary)
		}
	}
	if summary.Len()*5 > whole.Len() {
		t.Errorf("summary %d bytes, whole %d: want it far smaller", summary.Len(), whole.Len())
	}
}
