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
// stays the time of the read.
func TestReceivedAt(t *testing.T) {
	const now = clock.Time(5_000_000_000)
	got := receivedAt(timestampCmsg(time.Now().Add(-3*time.Millisecond)), now)
	if back := now.Sub(got); back < 3*time.Millisecond || back > 4*time.Millisecond {
		t.Errorf("a datagram that waited 3 ms: moved back by %v", back)
	}
	for what, oob := range map[string][]byte{
		"no control message": nil,
		"a future timestamp": timestampCmsg(time.Now().Add(time.Hour)),
		"a stale timestamp":  timestampCmsg(time.Now().Add(-time.Hour)),
		"a truncated one":    timestampCmsg(time.Now())[:20],
	} {
		if got := receivedAt(oob, now); got != now {
			t.Errorf("%s: %v, want the read's time %v", what, got, now)
		}
	}
}
