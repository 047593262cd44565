// Package snmp reads the counters of /proc/net/snmp (and netstat's file
// of the same layout): for each protocol a line of names and a line of
// values, both starting with the protocol's name ("Udp:").
package snmp

import (
	"strconv"
	"strings"
)

// Counter returns the value of counter name of protocol proto ("Udp",
// "RcvbufErrors") in text, the file's content, and whether it is there.
func Counter(text, proto, name string) (uint64, bool) {
	var names []string
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != proto+":" {
			continue
		}
		if names == nil {
			names = f
			continue
		}
		for i, n := range names {
			if n == name && i < len(f) {
				v, err := strconv.ParseUint(f[i], 10, 64)
				return v, err == nil
			}
		}
		return 0, false
	}
	return 0, false
}
