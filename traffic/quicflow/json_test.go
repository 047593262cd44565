package quicflow

import (
	"net/netip"
	"testing"
	"time"

	"wanlab/internal/schematest"
	"wanlab/traffic"
)

// Every key of a QUIC flow's result is snake_case, the flow's description
// sits at the top level as in the other flows' results, and the typed
// values read as words or addresses.
func TestResultJSONIsSnakeCase(t *testing.T) {
	r := &Result{
		FlowInfo: traffic.FlowInfo{Label: "QUIC upload", Kind: Kind},
		Dir:      traffic.Down,
		CC:       CongestionControl,
		Sender:   EndInfo{Local: netip.MustParseAddrPort("10.0.0.1:5000"), Version: "v1", ALPN: ALPN},
		Samples:  []Sample{{K: 3, Sender: EndStats{SRTT: 40 * time.Millisecond, Cwnd: 12345, CongestionState: "slow_start"}}},
	}
	schematest.CheckFilled(t, r, 70, `"label":"QUIC upload"`, `"kind":"quic"`, `"direction":"down"`, `"cc":"newreno"`,
		`"local":"10.0.0.1:5000"`, `"alpn":"wanlab-bulk"`, `"srtt_ns":40000000`, `"cwnd_bytes":12345`, `"congestion_state":"slow_start"`)
}
