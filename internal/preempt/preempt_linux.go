package preempt

import (
	"compress/gzip"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// configLimit bounds what is read of a build configuration (a few
// hundred KiB uncompressed).
const configLimit = 4 << 20

// Mode returns the running kernel's preemption mode (None, Voluntary,
// Full, Lazy or RT), or "" when it cannot tell. A PREEMPT_DYNAMIC kernel's
// current mode is in debugfs, which only root reads and which may not be
// mounted; without it the boot parameter preempt= decides, else the
// build's default. Mode reads files only; it mounts nothing.
func Mode() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return ""
	}
	mode, dynamic := FromVersion(unix.ByteSliceToString(u.Version[:]))
	if mode != "" {
		return mode
	}
	if dynamic {
		if b, err := os.ReadFile("/sys/kernel/debug/sched/preempt"); err == nil {
			if m := FromDebugfs(string(b)); m != "" {
				return m
			}
		}
		if b, err := os.ReadFile("/proc/cmdline"); err == nil {
			if m := FromCmdline(string(b)); m != "" {
				return m
			}
		}
	}
	return buildDefault(unix.ByteSliceToString(u.Release[:]))
}

// buildDefault reads the mode the kernel was built with from
// /proc/config.gz, else /boot/config-release.
func buildDefault(release string) string {
	if f, err := os.Open("/proc/config.gz"); err == nil {
		defer f.Close()
		if z, err := gzip.NewReader(f); err == nil {
			if m := FromConfig(io.LimitReader(z, configLimit)); m != "" {
				return m
			}
		}
	}
	if f, err := os.Open("/boot/config-" + release); err == nil {
		defer f.Close()
		return FromConfig(io.LimitReader(f, configLimit))
	}
	return ""
}
