package traffic

import (
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"wanlab/clock"
)

// timestampCmsg builds the control message SO_TIMESTAMPNS delivers for a
// datagram received at wall time t, after a TOS message as the probes'
// sockets get them.
func timestampCmsg(t time.Time) []byte {
	tosLen := unix.CmsgSpace(4)
	b := make([]byte, tosLen+unix.CmsgSpace(int(unsafe.Sizeof(unix.Timespec{}))))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = unix.IPPROTO_IPV6, unix.IPV6_TCLASS
	h.SetLen(unix.CmsgLen(4))
	h = (*unix.Cmsghdr)(unsafe.Pointer(&b[tosLen]))
	h.Level, h.Type = unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS
	h.SetLen(unix.CmsgLen(int(unsafe.Sizeof(unix.Timespec{}))))
	*(*unix.Timespec)(unsafe.Pointer(&b[tosLen+unix.CmsgLen(0)])) = unix.NsecToTimespec(t.UnixNano())
	return b
}

// The receive time is read back by the wait the kernel's timestamp shows;
// without a timestamp, or with one the wall clock was stepped across, it
// is the time of the call.
func TestReceivedAt(t *testing.T) {
	clk := clock.NewReal()
	stamp, at := time.Now(), clk.Now()
	got := receivedAt(timestampCmsg(stamp.Add(-3*time.Millisecond)), clk)
	if back := at.Sub(got); back < 2900*time.Microsecond || back > 4*time.Millisecond {
		t.Errorf("a datagram that waited 3 ms: %v before the call", back)
	}
	for what, oob := range map[string][]byte{
		"no control message": nil,
		"a future timestamp": timestampCmsg(time.Now().Add(time.Hour)),
		"a stale timestamp":  timestampCmsg(time.Now().Add(-time.Hour)),
		"a truncated one":    timestampCmsg(time.Now())[:20],
	} {
		before := clk.Now()
		if got := receivedAt(oob, clk); got < before || got > clk.Now() {
			t.Errorf("%s: %v, want the call's time (%v)", what, got, before)
		}
	}
	// A reading taken later than the datagram's timestamp puts it no
	// earlier than the timestamp, however long the caller took between
	// its read and the call: the two clocks are read together.
	for range 100 {
		sent := clk.Now()
		ts := time.Now()
		time.Sleep(50 * time.Microsecond) // the reader was descheduled
		if got := receivedAt(timestampCmsg(ts), clk); got < sent {
			t.Fatalf("a datagram stamped after %v was received at %v, before it", sent, got)
		}
	}
}
