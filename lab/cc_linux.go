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
// socket by a privileged program (iperf3 -C, TCP_CONGESTION).
func CheckCC(cc string) error {
	read := func(key string) []string {
		b, _ := os.ReadFile("/proc/sys/net/ipv4/" + key)
		return strings.Fields(string(b))
	}
	avail := read("tcp_available_congestion_control")
	allowed := read("tcp_allowed_congestion_control")
	switch {
	case len(avail) == 0:
		return nil // no /proc to ask: let the kernel judge
	case !slices.Contains(avail, cc):
		return fmt.Errorf("congestion control %s is not loaded (have %s): load it with `modprobe tcp_%s`", cc, strings.Join(avail, ", "), cc)
	case len(allowed) > 0 && !slices.Contains(allowed, cc):
		return fmt.Errorf("congestion control %s is loaded but not in net.ipv4.tcp_allowed_congestion_control (%s), and only those can be a namespace's default: "+
			"allow it with `sysctl -w net.ipv4.tcp_allowed_congestion_control=\"%s %s\"`, or choose it per socket (iperf3 -C %s)",
			cc, strings.Join(allowed, " "), strings.Join(allowed, " "), cc, cc)
	}
	return nil
}
