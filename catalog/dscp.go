package catalog

import "strings"

// dscps are the DSCP code points by name: the class selectors CS0-CS7
// (RFC 2474), the assured forwarding classes AF11-AF43 (RFC 2597),
// expedited forwarding EF (RFC 3246), and BE, best effort, which is CS0.
var dscps = map[string]uint8{
	"BE":  0,
	"CS0": 0, "CS1": 8, "CS2": 16, "CS3": 24, "CS4": 32, "CS5": 40, "CS6": 48, "CS7": 56,
	"AF11": 10, "AF12": 12, "AF13": 14,
	"AF21": 18, "AF22": 20, "AF23": 22,
	"AF31": 26, "AF32": 28, "AF33": 30,
	"AF41": 34, "AF42": 36, "AF43": 38,
	"EF": 46,
}

// DSCPNames lists the names DSCP knows, for messages.
const DSCPNames = "BE, CS0-CS7, AF11-AF43, EF"

// DSCP returns the code point of a DSCP name, in any case, and whether it
// is one of DSCPNames.
func DSCP(name string) (uint8, bool) {
	d, ok := dscps[strings.ToUpper(name)]
	return d, ok
}
