package lab

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"wanlab/internal/rundir"
)

// These tests take this process for one inside the user's namespace
// (rundir.Env), where the checks of package rootless refuse what a user
// namespace cannot do, before anything is built.

func TestCheckLoadedCCRootless(t *testing.T) {
	avail := readCCList("tcp_available_congestion_control")
	if len(avail) == 0 {
		t.Skip("no net.ipv4.tcp_available_congestion_control")
	}
	missing := ""
	for _, cc := range []string{"dctcp", "vegas", "westwood", "htcp", "illinois", "hybla", "lp"} {
		if !slices.Contains(avail, cc) {
			missing = cc
			break
		}
	}
	if missing == "" {
		t.Skip("every candidate is loaded")
	}
	if os.Geteuid() == 0 {
		t.Setenv(rundir.Env, "")
		err := CheckLoadedCC(missing)
		if err == nil || !strings.Contains(err.Error(), "`modprobe tcp_"+missing+"`") {
			t.Errorf("as root: %v", err)
		}
	}
	t.Setenv(rundir.Env, t.TempDir())
	err := CheckLoadedCC(missing)
	for _, want := range []string{missing + " is not loaded", "never for a user namespace", "`sudo modprobe tcp_" + missing + "`"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("rootless: %v, want it to say %q", err, want)
		}
	}
	if err := CheckLoadedCC(avail[0]); err != nil {
		t.Errorf("rootless, %s loaded: %v", avail[0], err)
	}
}

func TestCheckCCRootless(t *testing.T) {
	avail := readCCList("tcp_available_congestion_control")
	allowed := readCCList("tcp_allowed_congestion_control")
	notAllowed := ""
	for _, cc := range avail {
		if !slices.Contains(allowed, cc) {
			notAllowed = cc
		}
	}
	if notAllowed == "" {
		t.Skip("every loaded congestion control is allowed here")
	}
	t.Setenv(rundir.Env, t.TempDir())
	err := CheckCC(notAllowed)
	for _, want := range []string{"a user namespace cannot change", "`sudo sysctl -w net.ipv4.tcp_allowed_congestion_control=", "per socket, which needs no root"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("rootless %s: %v, want it to say %q", notAllowed, err, want)
		}
	}
}

func TestOptionsCheckRootless(t *testing.T) {
	t.Setenv(rundir.Env, t.TempDir())
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_RTPRIO, &rl); err != nil {
		t.Fatal(err)
	}
	if rl.Cur == unix.RLIM_INFINITY || rl.Cur >= 99 {
		t.Log("RLIMIT_RTPRIO allows 99 here: the refusal is not checked")
	} else {
		err := Options{RealTimePriority: 99}.Check()
		if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "RLIMIT_RTPRIO") {
			t.Errorf("priority 99, RLIMIT_RTPRIO %d: %v", rl.Cur, err)
		}
	}
	if err := (Options{}).Check(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	err := Options{DataPlane: PacketPlane}.Check()
	if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "packet data plane needs real root") {
		t.Errorf("packet plane: %v", err)
	}
	if os.Geteuid() == 0 {
		t.Setenv(rundir.Env, "")
		if err := (Options{DataPlane: PacketPlane, RealTimePriority: 99}).Check(); err != nil {
			t.Errorf("as root: %v", err)
		}
	}
}
