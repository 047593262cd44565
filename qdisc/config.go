package qdisc

import "time"

// Rate is a transmission rate in bytes per second, as the kernel holds it
// (tc parses "10mbit" to 1250000).
type Rate uint64

// BitsPerSecond returns the rate in bit/s.
func (r Rate) BitsPerSecond() uint64 { return uint64(r) * 8 }

// TxTime returns how long n bytes take at rate r, in ns, truncated as the
// kernel's integer arithmetic does. A zero rate means no limit (0 ns).
func (r Rate) TxTime(n int) time.Duration {
	if r == 0 {
		return 0
	}
	return time.Duration(uint64(n) * 1e9 / uint64(r))
}

// CorrelationMode chooses how netem realises a correlated probability.
type CorrelationMode uint8

const (
	// CorrelationCorrect realises the configured probability exactly, with
	// the configured value as the lag-1 correlation: a two-state chain for
	// loss, duplicate, corrupt and reorder (P(event|event) = p + c(1-p),
	// P(event|no event) = p(1-c)), and an AR(1) Gaussian copula mapped through
	// the distribution's inverse CDF for delay. It is wanlab's default.
	CorrelationCorrect CorrelationMode = iota
	// CorrelationKernel reproduces the kernel's get_crandom bit for bit,
	// with its known bias (loss 1% 25% loses almost nothing).
	CorrelationKernel
)

// String returns the mode's keyword in wanlab's tc extension syntax.
func (m CorrelationMode) String() string {
	if m == CorrelationKernel {
		return "kernel"
	}
	return "correct"
}

// InvSqrtMode chooses how CoDel computes interval/sqrt(count).
type InvSqrtMode uint8

const (
	// InvSqrtLinux is Linux's single Newton step on a Q0.16 value (default).
	InvSqrtLinux InvSqrtMode = iota
	// InvSqrtExact computes 1/sqrt(count) exactly (RFC 8289's intent).
	InvSqrtExact
)

// String returns the mode's keyword.
func (m InvSqrtMode) String() string {
	if m == InvSqrtExact {
		return "exact"
	}
	return "linux"
}

// Distribution is a netem delay distribution: a table of the inverse CDF of
// a standardised variable, scaled by 8192 (NETEM_DIST_SCALE) as tc's .dist
// files hold it. A nil Table means uniform.
type Distribution struct {
	// Name is "uniform", "normal", "pareto", "paretonormal" or the name of the
	// file it was loaded from.
	Name  string
	Table []int16
}

// LossKind selects netem's loss model.
type LossKind uint8

// Loss models.
const (
	LossNone    LossKind = iota
	LossRandom           // loss [random] P [CORR]
	LossState            // loss state P13 [P31 [P32 [P23 [P14]]]]
	LossGEModel          // loss gemodel P [R [1-H [1-K]]]
)

// Loss is netem's loss configuration. Probabilities are in [0,1].
type Loss struct {
	Kind LossKind
	// Random: P with correlation Corr.
	P, Corr float64
	// 4-state Markov model (state numbering of the paper: 1 gap/received,
	// 2 burst/received, 3 burst/lost, 4 isolated loss).
	P13, P31, P32, P23, P14 float64
	// Gilbert-Elliott: P (good→bad), R (bad→good), OneMinusH (loss
	// probability in the bad state), OneMinusK (loss probability in the good
	// state), as tc's arguments are given.
	GEP, GER, OneMinusH, OneMinusK float64
}

// Slot is netem's slotting configuration (slot MIN [MAX] | slot
// distribution D DELAY JITTER) with its packet and byte budgets.
type Slot struct {
	Min, Max time.Duration
	// Dist, DistDelay and DistJitter describe a distribution slot; Dist.Name
	// is empty for a MIN/MAX slot.
	Dist       Distribution
	DistDelay  time.Duration
	DistJitter time.Duration
	Packets    int // per-slot packet budget; 0 = unlimited
	Bytes      int // per-slot byte budget; 0 = unlimited
}

// Enabled reports whether slotting is configured.
func (s Slot) Enabled() bool { return s.Min != 0 || s.Max != 0 || s.DistJitter != 0 }

// NetemConfig is netem's configuration (tc-netem(8)).
type NetemConfig struct {
	Limit     int // packets; tc's default is 1000
	Delay     time.Duration
	Jitter    time.Duration
	DelayCorr float64
	// Dist is the jitter distribution; the zero value is uniform.
	Dist Distribution

	Loss Loss
	ECN  bool // mark ECT packets instead of dropping them (loss model only)

	Corrupt, CorruptCorr     float64
	Duplicate, DuplicateCorr float64
	Reorder, ReorderCorr     float64
	Gap                      uint32

	Rate           Rate
	PacketOverhead int32
	CellSize       uint32
	CellOverhead   int32

	Slot Slot

	// Seed, when SeedSet, seeds netem's private random state (as tc's
	// "seed"); otherwise the stream is derived from Env.Seed.
	Seed    uint64
	SeedSet bool

	// Correlation chooses correct (default) or kernel-compatible correlated
	// randomness (wanlab extension: "correlation kernel|correct").
	Correlation CorrelationMode
	// FIFOJitter keeps arrival order while delays vary: tts = max(now + d,
	// last tts) (wanlab extension: "fifo_jitter").
	FIFOJitter bool
	// OldGap uses the pre-2012 gap comparison (counter < gap: every
	// (gap+1)-th packet is reordered) instead of counter < gap-1.
	OldGap bool
}

// Kind returns "netem".
func (NetemConfig) Kind() string { return "netem" }

// LinkLayer is tbf's link-layer size table.
type LinkLayer uint8

// Link layers.
const (
	LinkEthernet LinkLayer = iota
	LinkATM                // ceil(len/48)*53 (atm and adsl)
)

// TBFConfig is tbf's configuration (tc-tbf(8)), after tc's arithmetic:
// "latency" has already been turned into Limit.
type TBFConfig struct {
	Rate     Rate
	Burst    int // bytes (burst, buffer and maxburst are synonyms)
	Limit    int // bytes of the default bfifo child
	PeakRate Rate
	MTU      int // peakrate bucket (mtu, minburst)
	MPU      int
	Overhead int
	Link     LinkLayer
}

// Kind returns "tbf".
func (TBFConfig) Kind() string { return "tbf" }

// FifoConfig configures pfifo, bfifo and pfifo_head_drop.
type FifoConfig struct {
	// Variant is "pfifo", "bfifo" or "pfifo_head_drop".
	Variant string
	// Limit is in packets (pfifo, pfifo_head_drop) or bytes (bfifo); 0 means
	// the default: txqueuelen packets, or txqueuelen*psched_mtu bytes
	// (Env.PschedMTU: 1514 per packet on Ethernet).
	Limit int
}

// Kind returns the variant's name.
func (c FifoConfig) Kind() string {
	if c.Variant == "" {
		return "pfifo"
	}
	return c.Variant
}

// PfifoFastConfig configures pfifo_fast, which has no options: three bands
// of txqueuelen packets each, with the kernel's fixed priomap.
type PfifoFastConfig struct{}

// Kind returns "pfifo_fast".
func (PfifoFastConfig) Kind() string { return "pfifo_fast" }

// CoDelConfig configures codel (tc-codel(8)).
type CoDelConfig struct {
	Limit       int           // packets; default 1000
	Target      time.Duration // default 5ms
	Interval    time.Duration // default 100ms
	ECN         bool          // default off
	CEThreshold time.Duration // 0 = disabled
	InvSqrt     InvSqrtMode   // wanlab extension: "invsqrt linux|exact"
}

// Kind returns "codel".
func (CoDelConfig) Kind() string { return "codel" }

// WithDefaults returns c with tc's default in each field left zero, which
// the kernel keeps when tc sends no such option: limit 1000, target 5ms,
// interval 100ms.
func (c CoDelConfig) WithDefaults() CoDelConfig {
	orDefault(&c.Limit, DefaultCoDelLimit)
	codelTimeDefaults(&c.Target, &c.Interval)
	return c
}

// codelTimeDefaults fills in the target and interval that codel and
// fq_codel share.
func codelTimeDefaults(target, interval *time.Duration) {
	orDefault(target, DefaultCoDelTarget)
	orDefault(interval, DefaultCoDelInterval)
}

// orDefault sets *v to d when it is zero.
func orDefault[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}

// FQCoDelConfig configures fq_codel (tc-fq_codel(8)).
type FQCoDelConfig struct {
	Limit       int           // packets; default 10240
	Flows       int           // default 1024
	Target      time.Duration // default 5ms
	Interval    time.Duration // default 100ms
	Quantum     int           // bytes; 0 = psched_mtu
	ECN         bool          // tc's default is on (tcspec fills it); the zero value means noecn
	CEThreshold time.Duration // 0 = disabled
	MemoryLimit int           // bytes; default 32 MiB
	DropBatch   int           // default 64
	InvSqrt     InvSqrtMode
	// MemOverhead approximates skb truesize - len for memory_limit
	// accounting (wanlab extension); 0 means the default.
	MemOverhead int
}

// Kind returns "fq_codel".
func (FQCoDelConfig) Kind() string { return "fq_codel" }

// WithDefaults returns c with tc's default in each field left zero that
// tc -s shows: limit 10240, flows 1024, target 5ms, interval 100ms,
// memory_limit 32 MiB, drop_batch 64. Quantum, which the kernel derives
// from the device, and MemOverhead, wanlab's own, stay as they are.
func (c FQCoDelConfig) WithDefaults() FQCoDelConfig {
	orDefault(&c.Limit, DefaultFQCoDelLimit)
	orDefault(&c.Flows, DefaultFQCoDelFlows)
	orDefault(&c.MemoryLimit, DefaultMemoryLimit)
	orDefault(&c.DropBatch, DefaultDropBatch)
	codelTimeDefaults(&c.Target, &c.Interval)
	return c
}

// PIEConfig configures pie (tc-pie(8)).
type PIEConfig struct {
	Limit           int           // packets; default 1000
	Target          time.Duration // default 15ms
	TUpdate         time.Duration // default 15ms (rounded up to jiffies)
	Alpha           int           // in 1/16; default 2
	Beta            int           // in 1/16; default 20
	ECN             bool
	Bytemode        bool
	DQRateEstimator bool
}

// Kind returns "pie".
func (PIEConfig) Kind() string { return "pie" }

// WithDefaults returns c with tc's default in each field left zero, which
// the kernel keeps when tc sends no such option: limit 1000, target 15ms,
// tupdate 15ms, alpha 2, beta 20.
func (c PIEConfig) WithDefaults() PIEConfig {
	orDefault(&c.Limit, DefaultPIELimit)
	orDefault(&c.Target, DefaultPIETarget)
	orDefault(&c.TUpdate, DefaultPIETUpdate)
	orDefault(&c.Alpha, DefaultPIEAlpha)
	orDefault(&c.Beta, DefaultPIEBeta)
	return c
}

// MaxNetemDelay is the longest delay (and slot length) netem takes: 2^62
// ns, about 146 years. tc and the kernel take any 64-bit number of ns, and
// the kernel's s64 arithmetic then wraps a large enough delay into the
// past, sending the packet at once; wanlab refuses delays that its own
// int64 nanosecond clock could not add to a time.
const MaxNetemDelay = time.Duration(1 << 62)

// Defaults returned by the constructors when a field is zero.
const (
	DefaultNetemLimit    = 1000
	DefaultCoDelLimit    = 1000
	DefaultFQCoDelLimit  = 10240
	DefaultFQCoDelFlows  = 1024
	DefaultMemoryLimit   = 32 << 20
	DefaultDropBatch     = 64
	DefaultPIELimit      = 1000
	DefaultCoDelTarget   = 5 * time.Millisecond
	DefaultCoDelInterval = 100 * time.Millisecond
	DefaultPIETarget     = 15 * time.Millisecond
	DefaultPIETUpdate    = 15 * time.Millisecond
	DefaultPIEAlpha      = 2
	DefaultPIEBeta       = 20
)
