package lab

import (
	"fmt"
	"slices"
	"strings"

	"wanlab/rootless"
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
		// The list is the machine's: without root, only root changes it.
		if err := rootless.CCNotAllowed(cc, allowed); err != nil {
			return err
		}
		return fmt.Errorf("congestion control %s is loaded but not in net.ipv4.tcp_allowed_congestion_control (%s), and only those can be a namespace's default: "+
			"allow it with `sysctl -w net.ipv4.tcp_allowed_congestion_control=\"%s %s\"`, or choose it per socket (iperf3 -C %s)",
			cc, strings.Join(allowed, " "), strings.Join(allowed, " "), cc, cc)
	}
	return nil
}
