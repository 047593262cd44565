package traffic

import (
	"net/netip"
	"testing"

	"wanlab/internal/schematest"
)

// Every key of a result's JSON is snake_case, down to the TCP_INFO and
// the socket addresses, and the typed values read as words or addresses.
func TestResultJSONIsSnakeCase(t *testing.T) {
	res := &Result{
		Ticks:   []Tick{{K: 1, T: 2}},
		Skipped: []int{3},
		Flows: []FlowResult{
			&TCPResult{FlowInfo: FlowInfo{Label: "TCP upload", Kind: "tcp"}, Dir: Down,
				Sender:  SocketInfo{Local: netip.MustParseAddrPort("10.0.0.1:5000")},
				Samples: []TCPSample{{Sender: TCPInfo{SndCwnd: 10}}}},
			&ProbeResult{FlowInfo: FlowInfo{Kind: "udp_probe"}, Probes: []Probe{{Lost: true, LostDir: LostDown}}},
			&FloodResult{FlowInfo: FlowInfo{Kind: "udp_flood"}, Steps: []FloodStep{{}}},
		},
	}
	schematest.CheckFilled(t, res, 100, `"direction":"down"`, `"local":"10.0.0.1:5000"`, `"lost_dir":"down"`, `"snd_cwnd":10`, `"srtt_ns":0`)
}
