package scalable

import (
	"errors"
	"math"
	"testing"
	"time"
	"wanlab/clock"

	"wanlab/packet"
)

func TestWireRoundTrip(t *testing.T) {
	h := DataHeader{Seq: 1<<40 + 7, Timestamp: 123456789}
	b := AppendData([]byte("x"), h)[1:]
	b = append(b, "payload"...)
	got, payload, err := ParseData(b)
	if err != nil || got != h || string(payload) != "payload" {
		t.Errorf("ParseData: %+v %q %v, want %+v", got, payload, err, h)
	}
	a := Ack{Highest: 99, Echo: 5, Delay: time.Millisecond, Packets: 90, Bytes: 90000, CEPackets: 9, CEBytes: 9000, ECT1Packets: 80, NotECTPackets: 1}
	ab := AppendAck(nil, a)
	if len(ab) != AckLen {
		t.Fatalf("ACK of %d bytes, want %d", len(ab), AckLen)
	}
	if got, err := ParseAck(ab); err != nil || got != a {
		t.Errorf("ParseAck: %+v %v, want %+v", got, err, a)
	}
	for _, c := range []struct {
		b    []byte
		want error
	}{
		{ab[:3], ErrShort},
		{ab[:AckLen-1], ErrShort},
		{append([]byte("TF"), ab[2:]...), ErrMagic},
		{b, ErrType},
		{AppendAck(nil, Ack{Packets: 1, CEPackets: 2}), ErrField},
		{AppendAck(nil, Ack{Packets: 1, Bytes: 1, CEBytes: 2}), ErrField},
		{AppendAck(nil, Ack{}), ErrField},
		{AppendAck(nil, Ack{Packets: 1, Delay: -1}), ErrField},
	} {
		if _, err := ParseAck(c.b); !errors.Is(err, c.want) {
			t.Errorf("ParseAck(%x): %v, want %v", c.b, err, c.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() {
		ParseAck(ab)
		ParseData(b)
		AppendAck(ab[:0], a)
	}); n != 0 {
		t.Errorf("%v allocations per encode and decode, want 0", n)
	}
}

// The receiver counts every codepoint and keeps running totals, so an ACK
// that follows a lost one still carries every mark; with AckEvery 2 a lone
// packet is acknowledged after the ACK delay.
func TestReceiverCounters(t *testing.T) {
	r, err := NewReceiver(ReceiverConfig{AckEvery: 2})
	if err != nil {
		t.Fatal(err)
	}
	r.OnData(0, DataHeader{Seq: 0, Timestamp: 0}, 1000, packet.CE)
	if _, ok := r.Poll(0); ok {
		t.Error("an ACK for the first of two packets")
	}
	r.OnData(10, DataHeader{Seq: 2, Timestamp: 5}, 1000, packet.ECT1)
	a, ok := r.Poll(10)
	if !ok || a.Highest != 2 || a.Echo != 5 || a.Packets != 2 || a.CEPackets != 1 || a.CEBytes != 1000 || a.ECT1Packets != 1 {
		t.Errorf("ACK %+v, %v", a, ok)
	}
	r.OnData(20, DataHeader{Seq: 3, Timestamp: 6}, 500, packet.NotECT)
	if d := r.Deadline(); d != 20+1e6 {
		t.Errorf("deadline %v, want 1 ms after the lone packet", d)
	}
	if a, ok := r.Poll(20 + 1e6); !ok || a.Delay != time.Millisecond || a.Packets != 3 || a.NotECTPackets != 1 || a.CEPackets != 1 {
		t.Errorf("delayed ACK %+v, %v", a, ok)
	}
	if st := r.Stats(); st.Lost != 1 || st.Acks != 2 || st.PayloadBytes != 2500-3*DataHeaderLen {
		t.Errorf("stats %+v", st)
	}
	if _, err := NewReceiver(ReceiverConfig{AckEvery: 3}); err == nil {
		t.Error("an ACK every 3 packets accepted")
	}
}

// α follows RFC 8257's update once per window, and a window with marks
// reduces cwnd by α/2 once.
func TestSenderAlphaAndReduction(t *testing.T) {
	s, err := NewSender(SenderConfig{PacketSize: 1000}, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The initial window of 10 leaves at once (no RTT sample yet).
	for i := range 10 {
		if h, ok := s.Poll(0); !ok || h.Seq != uint64(i) {
			t.Fatalf("packet %d: %+v %v", i, h, ok)
		}
	}
	if _, ok := s.Poll(0); ok {
		t.Fatal("an 11th packet in a window of 10")
	}
	// One ACK for all ten, four of them CE: F = 0.4.
	now := clockMs(20)
	s.OnAck(now, Ack{Highest: 9, Echo: 0, Packets: 10, Bytes: 10000, CEPackets: 4, CEBytes: 4000, ECT1Packets: 6})
	st := s.Stats()
	wantAlpha := (1-G)*1 + G*0.4
	if math.Abs(st.Alpha-wantAlpha) > 1e-12 || st.F != 0.4 {
		t.Errorf("α %v, F %v; want %v and 0.4", st.Alpha, st.F, wantAlpha)
	}
	if want := 10 * (1 - wantAlpha/2); math.Abs(st.Cwnd-want) > 1e-12 || st.CEReductions != 1 || st.SlowStart {
		t.Errorf("cwnd %v after marks, %d reductions, slow start %v; want %v, 1, false", st.Cwnd, st.CEReductions, st.SlowStart, want)
	}
	if st.SRTT != 20*time.Millisecond || st.PacingRate == 0 {
		t.Errorf("SRTT %v, pacing rate %v", st.SRTT, st.PacingRate)
	}
	if _, err := NewSender(SenderConfig{PacketSize: DataHeaderLen}, 0); err == nil {
		t.Error("a packet size with no room for data accepted")
	}
}

func clockMs(ms int) clock.Time { return clock.Time(time.Duration(ms) * time.Millisecond) }
