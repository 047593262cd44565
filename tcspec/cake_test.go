package tcspec

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"wanlab/qdisc"
)

// cake_parse_opt's arithmetic: the framing keywords add to the overhead
// and set the cell mode, overhead N and conservative replace it, raw
// zeroes it and clears the overhead flag, ethernet and docsis set the mpu;
// rtt sets target to rtt/20 (at least 1 µs), the presets both.
func TestParseCake(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		line string
		want qdisc.CakeConfig
	}{
		{"cake", qdisc.CakeConfig{}},
		{"cake bandwidth 10mbit", qdisc.CakeConfig{Bandwidth: 1250000}},
		{"cake bandwidth 10mbit unlimited", qdisc.CakeConfig{}},
		{"cake rtt 50ms", qdisc.CakeConfig{RTT: 50 * ms, Target: 2500 * time.Microsecond}},
		{"cake rtt 0", qdisc.CakeConfig{Target: time.Microsecond}},
		{"cake rtt 10us", qdisc.CakeConfig{RTT: 10 * time.Microsecond, Target: time.Microsecond}},
		{"cake datacentre", qdisc.CakeConfig{RTT: 100 * time.Microsecond, Target: 5 * time.Microsecond}},
		{"cake interplanetary", qdisc.CakeConfig{RTT: 1000 * time.Second, Target: 50 * time.Second}},
		{"cake satellite rtt 20ms", qdisc.CakeConfig{RTT: 20 * ms, Target: ms}},
		{"cake diffserv", qdisc.CakeConfig{Diffserv: qdisc.CakeDiffserv4}},
		{"cake precedence dual-dsthost", qdisc.CakeConfig{Diffserv: qdisc.CakePrecedence, FlowMode: qdisc.CakeDualDstHost}},
		{"cake overhead 18 mpu 64", qdisc.CakeConfig{Overhead: 18, Compensate: true, MPU: 64}},
		{"cake overhead -64", qdisc.CakeConfig{Overhead: -64, Compensate: true}},
		{"cake pppoe-ptm", qdisc.CakeConfig{Overhead: 30, Compensate: true, ATM: qdisc.CakePTM}},
		{"cake pppoe-llcsnap ether-vlan", qdisc.CakeConfig{Overhead: 44, Compensate: true, ATM: qdisc.CakeATMCells}},
		{"cake ethernet ether-vlan ether-vlan", qdisc.CakeConfig{Overhead: 46, Compensate: true, MPU: 84}},
		{"cake ethernet overhead 10", qdisc.CakeConfig{Overhead: 10, Compensate: true, MPU: 84}},
		{"cake docsis", qdisc.CakeConfig{Overhead: 18, Compensate: true, MPU: 64}},
		{"cake conservative", qdisc.CakeConfig{Overhead: 48, Compensate: true, ATM: qdisc.CakeATMCells}},
		{"cake bridged-ptm atm", qdisc.CakeConfig{Overhead: 22, Compensate: true, ATM: qdisc.CakeATMCells}},
		{"cake atm raw", qdisc.CakeConfig{}},
		{"cake raw overhead 5", qdisc.CakeConfig{Overhead: 5}},
		{"cake overhead 5 raw", qdisc.CakeConfig{}},
		{"cake via-ethernet", qdisc.CakeConfig{}},
		{"cake wash nowash wash no-split-gso ingress ack-filter-aggressive", qdisc.CakeConfig{Wash: true, NoSplitGSO: true, Ingress: true, AckFilter: qdisc.CakeAckFilterAggressive}},
		{"cake nonat egress split-gso no-ack-filter", qdisc.CakeConfig{}},
		{"cake memlimit 4mb fwmark 0xff", qdisc.CakeConfig{Memlimit: 4 << 20, Fwmark: 0xff}},
	} {
		s, err := Parse(c.line, Options{})
		if err != nil {
			t.Errorf("%q: %v", c.line, err)
			continue
		}
		if want := c.want.WithDefaults(); s != want {
			t.Errorf("%q:\n got %+v\nwant %+v", c.line, s, want)
		}
	}
}

func TestParseCakeErrors(t *testing.T) {
	for _, c := range []struct{ line, token, want string }{
		{"cake bandwidth", "bandwidth", "needs a value"},
		{"cake bandwidth fast", "fast", "Illegal \"bandwidth\""},
		{"cake rtt soon", "soon", "Illegal \"rtt\""},
		{"cake overhead 257", "257", "valid range is -64 to 256"},
		{"cake overhead 1.5", "1.5", "valid range is -64 to 256"},
		{"cake mpu -1", "-1", "valid range is 0 to 256"},
		{"cake lan metro", "metro", "one RTT preset"},
		{"cake autorate-ingress", "autorate-ingress", "bandwidth RATE"},
		{"cake nat", "nat", "connection tracking"},
		{"cake memlimit lots", "lots", "bad size"},
		{"cake fwmark -1", "-1", "negative"},
		{"cake limit 100", "limit", "not a cake option"},
	} {
		_, err := Parse(c.line, Options{})
		var e *Error
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.line, err, c.want)
			continue
		}
		if ok := errors.As(err, &e); !ok || e.Token != c.token {
			t.Errorf("%q: token %q, want %q", c.line, e.Token, c.token)
		}
	}
}

// Random cake lines from tc's grammar print back to the same value.
func TestCakeRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	words := []string{"unlimited", "datacentre", "lan", "metro", "regional", "internet", "oceanic", "satellite", "interplanetary",
		"besteffort", "diffserv8", "diffserv4", "diffserv3", "precedence", "flowblind", "srchost", "dsthost", "hosts", "flows",
		"dual-srchost", "dual-dsthost", "triple-isolate", "nonat", "wash", "nowash", "split-gso", "no-split-gso", "ack-filter",
		"ack-filter-aggressive", "no-ack-filter", "ptm", "atm", "noatm", "conservative", "raw", "ipoa-vcmux", "pppoe-ptm",
		"bridged-ptm", "ethernet", "ether-vlan", "docsis", "ingress", "egress", "via-ethernet"}
	for range 3000 {
		line := []string{"cake"}
		for n := r.IntN(7); n >= 0; n-- {
			switch r.IntN(8) {
			case 0:
				line = append(line, "bandwidth", fmt.Sprintf("%dkbit", r.IntN(100000)))
			case 1:
				line = append(line, "rtt", fmt.Sprintf("%dus", r.IntN(300000)))
			case 2:
				line = append(line, "overhead", fmt.Sprint(r.IntN(321)-64))
			case 3:
				line = append(line, "mpu", fmt.Sprint(r.IntN(257)), "memlimit", fmt.Sprint(r.IntN(1<<20)), "fwmark", fmt.Sprint(r.IntN(256)))
			default:
				line = append(line, words[r.IntN(len(words))])
			}
		}
		roundTrip(t, strings.Join(line, " "))
	}
	for _, s := range []string{"cake rtt 0", "cake lan", "cake interplanetary", "cake raw overhead -3 atm", "cake rtt 100us"} {
		roundTrip(t, s)
	}
}
