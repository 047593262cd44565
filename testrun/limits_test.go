package testrun

import (
	"errors"
	"os"
	"strings"
	"testing"

	"wanlab/internal/rundir"
	"wanlab/tcspec"
)

// TestPrepareRootless takes this process for one inside the user's
// namespace (rundir.Env): what a user namespace cannot do is refused by
// Prepare, before anything is built, with the limit and the fix.
func TestPrepareRootless(t *testing.T) {
	t.Setenv(rundir.Env, t.TempDir())
	o := Defaults()
	o.Test = "ping"
	o.DataPlane = "packet"
	_, err := Prepare(o, tcspec.Options{})
	var bo *BadOption
	if !errors.As(err, &bo) || bo.Key != "dataplane" || !strings.Contains(err.Error(), "--dataplane packet: the packet data plane needs real root") {
		t.Errorf("--dataplane packet: %v", err)
	}
	o.DataPlane = "tun"
	if _, err := Prepare(o, tcspec.Options{}); err != nil {
		t.Errorf("--dataplane tun: %v", err)
	}

	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
	if err != nil || strings.Contains(string(b), "westwood") {
		t.Skip("westwood is loaded, or there is no /proc to ask")
	}
	o = Defaults()
	o.Test = "cubic_westwood"
	_, err = Prepare(o, tcspec.Options{})
	if !errors.As(err, &bo) || bo.Key != "test" || !strings.Contains(err.Error(), "never for a user namespace") || !strings.Contains(err.Error(), "`sudo modprobe tcp_westwood`") {
		t.Errorf("cubic_westwood: %v", err)
	}
	o = Defaults()
	o.CC = "westwood"
	_, err = Prepare(o, tcspec.Options{})
	if !errors.As(err, &bo) || bo.Key != "cc" || !strings.Contains(err.Error(), "`sudo modprobe tcp_westwood`") {
		t.Errorf("--cc westwood: %v", err)
	}
}
