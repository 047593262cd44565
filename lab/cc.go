package lab

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"wanlab/rootless"
)

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
		// Without root the kernel loads no module: the fix is root's.
		if err := rootless.CCNotLoaded(cc, avail); err != nil {
			return err
		}
		return fmt.Errorf("congestion control %s is not loaded (net.ipv4.tcp_available_congestion_control has %s): load its module with `modprobe tcp_%s`", cc, strings.Join(avail, ", "), cc)
	}
	return nil // loaded, or no /proc to ask: the kernel judges
}

// readCCList reads one of the kernel's lists of congestion controls.
func readCCList(key string) []string {
	b, _ := os.ReadFile("/proc/sys/net/ipv4/" + key)
	return strings.Fields(string(b))
}
