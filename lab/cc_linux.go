package lab

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

// CheckCC reports whether cc can be the congestion control of a testbed's
// hosts. Linux lets a namespace other than the root one make only an
// "allowed" algorithm its default (net.ipv4.tcp_allowed_congestion_control,
// which is global); any other loaded algorithm can still be chosen per
// socket by a privileged program (iperf3 -C, TCP_CONGESTION: see
// CheckLoadedCC).
func CheckCC(cc string) error {
	if err := CheckLoadedCC(cc); err != nil {
		return err
	}
	allowed := readCCList("tcp_allowed_congestion_control")
	if len(allowed) > 0 && !slices.Contains(allowed, cc) {
		return fmt.Errorf("congestion control %s is loaded but not in net.ipv4.tcp_allowed_congestion_control (%s), and only those can be a namespace's default: "+
			"allow it with `sysctl -w net.ipv4.tcp_allowed_congestion_control=\"%s %s\"`, or choose it per socket (iperf3 -C %s)",
			cc, strings.Join(allowed, " "), strings.Join(allowed, " "), cc, cc)
	}
	return nil
}

// CheckLoadedCC reports whether cc names a congestion control the kernel
// has loaded: what a root program's socket can choose for itself
// (TCP_CONGESTION), as wanlab's own flows do. Checked before anything is
// built, it turns a typo into a usage error rather than a failed flow.
func CheckLoadedCC(cc string) error {
	// The kernel's names: at most TCP_CA_NAME_MAX-1 bytes, and those of
	// its modules' files (tcp_NAME.ko).
	if cc == "" || len(cc) > 15 || strings.IndexFunc(cc, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_')
	}) >= 0 {
		return fmt.Errorf("%q is not a congestion control name: use reno, cubic, bbr, ... (see /proc/sys/net/ipv4/tcp_available_congestion_control)", cc)
	}
	avail := readCCList("tcp_available_congestion_control")
	if len(avail) > 0 && !slices.Contains(avail, cc) {
		return fmt.Errorf("congestion control %s is not loaded (have %s): load it with `modprobe tcp_%s`", cc, strings.Join(avail, ", "), cc)
	}
	return nil // loaded, or no /proc to ask: the kernel judges
}

// readCCList reads one of the kernel's lists of congestion controls.
func readCCList(key string) []string {
	b, _ := os.ReadFile("/proc/sys/net/ipv4/" + key)
	return strings.Fields(string(b))
}
