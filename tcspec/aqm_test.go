package tcspec

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"wanlab/qdisc"
)

func TestAQMAndFifos(t *testing.T) {
	ms, us := time.Millisecond, time.Microsecond
	codel := func(f func(c *qdisc.CoDelConfig)) qdisc.CoDelConfig {
		c := qdisc.CoDelConfig{Limit: 1000, Target: 5 * ms, Interval: 100 * ms}
		if f != nil {
			f(&c)
		}
		return c
	}
	fq := func(f func(c *qdisc.FQCoDelConfig)) qdisc.FQCoDelConfig {
		c := qdisc.FQCoDelConfig{Limit: 10240, Flows: 1024, Target: 5 * ms, Interval: 100 * ms, ECN: true, MemoryLimit: 32 << 20, DropBatch: 64}
		if f != nil {
			f(&c)
		}
		return c
	}
	pie := func(f func(c *qdisc.PIEConfig)) qdisc.PIEConfig {
		c := qdisc.PIEConfig{Limit: 1000, Target: 15 * ms, TUpdate: 15 * ms, Alpha: 2, Beta: 20}
		if f != nil {
			f(&c)
		}
		return c
	}
	fqPIE := func(f func(c *qdisc.FQPIEConfig)) qdisc.FQPIEConfig {
		c := qdisc.FQPIEConfig{Limit: 10240, Flows: 1024, Target: 15 * ms, TUpdate: 15 * ms, Alpha: 2, Beta: 20, MemoryLimit: 32 << 20, ECNProb: 10}
		if f != nil {
			f(&c)
		}
		return c
	}
	tests := []struct {
		in   string
		want qdisc.Spec
	}{
		{"pfifo", qdisc.FifoConfig{Variant: "pfifo"}},
		{"pfifo limit 100", qdisc.FifoConfig{Variant: "pfifo", Limit: 100}},
		{"bfifo limit 30k", qdisc.FifoConfig{Variant: "bfifo", Limit: 30720}},
		{"pfifo_head_drop limit 1k", qdisc.FifoConfig{Variant: "pfifo_head_drop", Limit: 1024}},
		{"pfifo_fast", qdisc.PfifoFastConfig{}},

		{"codel", codel(nil)},
		{"codel limit 0x100 target 2ms interval 50ms ecn ce_threshold 1ms", codel(func(c *qdisc.CoDelConfig) {
			c.Limit, c.Target, c.Interval, c.ECN, c.CEThreshold = 256, 2*ms, 50*ms, true, ms
		})},
		{"codel target 500 ecn noecn", codel(func(c *qdisc.CoDelConfig) { c.Target = 500 * us })}, // bare µs
		{"codel invsqrt exact", codel(func(c *qdisc.CoDelConfig) { c.InvSqrt = qdisc.InvSqrtExact })},
		{"codel ce_threshold 4294967295us", codel(nil)}, // tc's "unset" value

		{"fq_codel", fq(nil)},
		{"fq_codel noecn", fq(func(c *qdisc.FQCoDelConfig) { c.ECN = false })},
		{"fq_codel limit 100 flows 16 quantum 300 target 1ms interval 20ms memory_limit 4m drop_batch 8 ce_threshold 2500us", fq(func(c *qdisc.FQCoDelConfig) {
			c.Limit, c.Flows, c.Quantum, c.Target, c.Interval = 100, 16, 300, ms, 20*ms
			c.MemoryLimit, c.DropBatch, c.CEThreshold = 4<<20, 8, 2500*us
		})},
		{"fq_codel invsqrt exact mem_overhead 700", fq(func(c *qdisc.FQCoDelConfig) {
			c.InvSqrt, c.MemOverhead = qdisc.InvSqrtExact, 700
		})},
		{"fq_codel memory_limit 4294967295", fq(nil)}, // tc's "unset" value

		{"pie", pie(nil)},
		{"pie limit 500 target 20ms tupdate 30ms alpha 4 beta 32 ecn bytemode dq_rate_estimator", pie(func(c *qdisc.PIEConfig) {
			c.Limit, c.Target, c.TUpdate, c.Alpha, c.Beta = 500, 20*ms, 30*ms, 4, 32
			c.ECN, c.Bytemode, c.DQRateEstimator = true, true, true
		})},
		{"pie ecn noecn bytemode nobytemode dq_rate_estimator no_dq_rate_estimator", pie(nil)},

		{"fq_pie", fqPIE(nil)},
		{"fq_pie limit 5000 flows 256 target 10ms tupdate 20ms alpha 4 beta 20 quantum 3000 memory_limit 16mb ecn_prob 20 ecn bytemode dq_rate_estimator", fqPIE(func(c *qdisc.FQPIEConfig) {
			c.Limit, c.Flows, c.Target, c.TUpdate, c.Alpha, c.Beta = 5000, 256, 10*ms, 20*ms, 4, 20
			c.Quantum, c.MemoryLimit, c.ECNProb, c.ECN, c.Bytemode, c.DQRateEstimator = 3000, 16<<20, 20, true, true, true
		})},
		{"fq_pie ecn noecn bytemode nobytemode dq_rate_estimator no_dq_rate_estimator", fqPIE(nil)},
		{"fq_pie flows 65536 quantum 1k memory_limit 4294967295 ecn_prob 99 target 500 mem_overhead 700", fqPIE(func(c *qdisc.FQPIEConfig) {
			c.Flows, c.Quantum, c.MemoryLimit, c.ECNProb, c.Target, c.MemOverhead = 65536, 1024, 4294967295, 99, 500*us, 700
		})},
	}
	for _, tt := range tests {
		got := mustParse(t, tt.in, Options{})
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Parse(%q)\n got %#v\nwant %#v", tt.in, got, tt.want)
		}
	}
}

func TestAQMAndFifoErrors(t *testing.T) {
	tests := []struct {
		in, kind, token string
		msg             string
	}{
		{"pfifo limit 0", "pfifo", "0", "at least 1"},
		{"bfifo lim 10", "bfifo", "lim", `"lim" is not a bfifo option`}, // fifo wants the whole word
		{"pfifo limit", "pfifo", "limit", "needs a value"},
		{"pfifo_fast limit 10", "pfifo_fast", "limit", "takes no options"},
		{"codel tar 5ms", "codel", "tar", "not a codel option"}, // whole words only
		{"codel target 5mz", "codel", "5mz", `"target 5mz": bad time`},
		{"codel target 5ns", "codel", "5ns", "us, ms, s"},
		{"codel limit -1", "codel", "-1", "negative"},
		{"codel limit 1k", "codel", "1k", "whole number"}, // get_unsigned, not get_size
		{"codel ce_threshold 0", "codel", "ce_threshold", "leave ce_threshold out"},
		{"codel invsqrt fast", "codel", "fast", "invsqrt exact"},
		{"fq_codel ce_threshold 1ms ce_threshold_selector 0x1/0x3", "fq_codel", "ce_threshold_selector", "not supported by wanlab yet"},
		{"fq_codel ce_threshold_selector 0x1", "fq_codel", "0x1", "missing mask"},
		{"fq_codel ce_threshold_selector 0x1/0x300", "fq_codel", "0x300", "at most 255"},
		{"fq_codel ce_threshold_selector 256/0x3", "fq_codel", "256", "at most 255"},
		{"fq_codel memory_limit 0", "fq_codel", "0", "positive limit"},
		{"fq_codel flows x", "fq_codel", "x", "whole number"},
		{"fq_codel ecn foo", "fq_codel", "foo", "memory_limit SIZE"},
		{"pie alpha 33", "pie", "33", "up to 32"},
		{"pie beta 100", "pie", "100", "up to 32"},
		// tc sends no option whose value is 0, so the kernel keeps its
		// default: a 0 would silently mean the default, and is refused.
		{"codel limit 0", "codel", "0", "kernel would keep its default (1000)"},
		{"codel target 0ms", "codel", "0ms", "default (5ms)"},
		{"codel interval 0", "codel", "0", "default (100ms)"},
		{"fq_codel limit 0", "fq_codel", "0", "default (10240)"},
		{"fq_codel flows 0", "fq_codel", "0", "default (1024)"},
		{"fq_codel quantum 0", "fq_codel", "0", "1514 on Ethernet"},
		{"fq_codel drop_batch 0", "fq_codel", "0", "default (64)"},
		{"fq_codel target 0us", "fq_codel", "0us", "leave target out"},
		{"fq_codel mem_overhead 0", "fq_codel", "0", "default (804)"},
		{"pie limit 0", "pie", "0", "default (1000)"},
		{"pie tupdate 0", "pie", "0", "tc sends no tupdate when it reads 0"},
		{"pie target 0ms", "pie", "0ms", "default (15ms)"},
		{"pie alpha 0", "pie", "0", "default (2)"},
		{"pie beta 0", "pie", "0", "default (20)"},
		{"pie tupdate", "pie", "tupdate", "needs a value"},
		{"fq_pie ecn_prob 100", "fq_pie", "100", "below 100"},
		{"fq_pie ecn_prob 0", "fq_pie", "0", "default (10)"},
		{"fq_pie flows 65537", "fq_pie", "65537", "1 to 65536 flows"},
		{"fq_pie flows 0", "fq_pie", "0", "default (1024)"},
		{"fq_pie quantum 1048577", "fq_pie", "1048577", "1 to 1048576 bytes"},
		{"fq_pie quantum 0", "fq_pie", "0", "1514 on Ethernet"},
		{"fq_pie memory_limit 0", "fq_pie", "0", "default (32Mb)"},
		{"fq_pie alpha 33", "fq_pie", "33", "up to 32"},
		{"fq_pie limit 1k", "fq_pie", "1k", "whole number"}, // get_unsigned
		{"fq_pie tupdate 0", "fq_pie", "0", "tc sends no tupdate when it reads 0"},
		{"fq_pie ecn_p 10", "fq_pie", "ecn_p", "ecn_prob 1-99"}, // strcmp: whole words
		{"fq_pie memory_limit 1x", "fq_pie", "1x", `"memory_limit 1x"`},
	}
	for _, tt := range tests {
		_, err := Parse(tt.in, Options{})
		var te *Error
		if !errors.As(err, &te) {
			t.Errorf("Parse(%q) = %v, want an *Error", tt.in, err)
			continue
		}
		if te.Kind != tt.kind || te.Token != tt.token || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("Parse(%q) = %v (Kind %q Token %q); want %s, %q, containing %q", tt.in, err, te.Kind, te.Token, tt.kind, tt.token, tt.msg)
		}
	}
}
