package qdisc

import (
	"math"
	"math/rand/v2"
)

// netemRand holds the random streams of one netem instance.
//
// In kernel mode, prng is the instance's prandom_u32_state stream, seeded
// from the seed exactly as the kernel seeds it: every get_crandom,
// Markov-model and slot-distribution draw comes from it, in the kernel's
// order, so a seeded configuration without correlation, corruption and
// uniform slots replays the kernel's decisions bit for bit. The kernel
// takes three things from get_random_u32 instead, which no seed controls:
// the initial "last" value of each correlated source, the corrupted bit's
// position and the uniform slot length. They come from entropy, a second
// LFSR113 stream seeded from the same seed, so that they are reproducible
// without shifting prng by a single draw.
//
// In correct mode every draw comes from one PCG stream (math/rand/v2).
type netemRand struct {
	kernel  bool
	prng    prandom
	entropy prandom
	pcg     rand.PCG
	rnd     *rand.Rand
}

// entropySalt separates the entropy stream's seed from prng's.
const entropySalt = 0x9e3779b97f4a7c15

func (r *netemRand) init(kernel bool, seed uint64) {
	r.kernel = kernel
	r.prng = newPrandom(seed)
	r.entropy = newPrandom(seed ^ entropySalt)
	r.pcg = *rand.NewPCG(seed, entropySalt)
	r.rnd = rand.New(&r.pcg)
}

// u32 is a plain uniform draw: prandom_u32_state in kernel mode.
func (r *netemRand) u32() uint32 {
	if r.kernel {
		return r.prng.u32()
	}
	return r.pcg32()
}

// unseeded32 is a draw the kernel takes from get_random_u32.
func (r *netemRand) unseeded32() uint32 {
	if r.kernel {
		return r.entropy.u32()
	}
	return r.pcg32()
}

func (r *netemRand) pcg32() uint32 { return uint32(r.pcg.Uint64() >> 32) }

// event decides one kind of random event (random loss, duplication,
// corruption, reordering) with probability p and lag-1 correlation c.
//
// Kernel mode: the event happens when P >= crand, with P = rint(p*(2^32-1)).
// Correct mode: a two-state Markov chain with P(event | event) = p + c(1-p)
// and P(event | no event) = p(1-c), whose stationary probability is p and
// whose lag-1 autocorrelation is c; with c = 0 the draws are independent.
type event struct {
	p      uint32
	cr     crand
	pf     float64
	pOn    float64 // P(event | previous event)
	pOff   float64 // P(event | previous non-event)
	prev   bool
	enable bool // the kernel's "q->loss &&": no draw at all when off
}

func (e *event) init(r *netemRand, p, c float64) {
	e.p = kernelProb(p)
	e.cr = crand{rho: kernelProb(c), last: r.entropy.u32()}
	e.pf = p
	e.pOn = p + c*(1-p)
	e.pOff = p * (1 - c)
	if r.kernel {
		e.enable = e.p != 0
	} else {
		e.enable = p != 0
		// Start in the stationary distribution.
		e.prev = r.rnd.Float64() < p
	}
}

// fire draws one decision. It ignores enable: reorder draws even at 0.
func (e *event) fire(r *netemRand) bool {
	if r.kernel {
		return e.p >= e.cr.next(&r.prng)
	}
	q := e.pOff
	if e.prev {
		q = e.pOn
	}
	e.prev = r.rnd.Float64() < q
	return e.prev
}

// delayGen draws netem's delay (tabledist) for mean mu and jitter sigma.
//
// Kernel mode follows tabledist exactly, correlated through crand. Correct
// mode draws u uniform in [0,1), i.i.d. without correlation, otherwise as
// Φ(z) of an AR(1) Gaussian process z' = ρz + sqrt(1-ρ²)e, and maps u
// through the distribution's inverse CDF: uniform gives mu-sigma +
// 2*sigma*u, a table gives table[u*size] scaled as tabledist scales it.
// ρ is chosen so that the realised lag-1 correlation of the delays equals
// the configured one (copulaRho): for uniform delays ρ = 2 sin(πc/6), for a
// table it is solved from the table's Hermite expansion.
type delayGen struct {
	mu    int64
	sigma int32
	table []int16
	cr    crand
	corr  bool
	rho   float64
	s     float64 // sqrt(1-ρ²)
	z     float64
}

func (g *delayGen) init(r *netemRand, mu int64, sigma int32, c float64, table []int16) {
	*g = delayGen{mu: mu, sigma: sigma, table: table}
	g.cr = crand{rho: kernelProb(c), last: r.entropy.u32()}
	if !r.kernel && c > 0 && sigma != 0 {
		g.corr = true
		g.rho = copulaRho(c, table)
		g.s = math.Sqrt(1 - g.rho*g.rho)
		g.z = r.rnd.NormFloat64()
	}
}

// next returns the next delay in ns; it may be negative.
func (g *delayGen) next(r *netemRand) int64 {
	if g.sigma == 0 {
		return g.mu
	}
	if r.kernel {
		return tabledist(g.mu, g.sigma, g.cr.next(&r.prng), g.table)
	}
	var u float64
	if g.corr {
		g.z = g.rho*g.z + g.s*r.rnd.NormFloat64()
		u = .5 * math.Erfc(-g.z/math.Sqrt2)
	} else {
		u = r.rnd.Float64()
	}
	return quantile(g.mu, g.sigma, u, g.table)
}

// tabledist is the kernel's tabledist for a random value rnd; sigma > 0.
func tabledist(mu int64, sigma int32, rnd uint32, table []int16) int64 {
	if table == nil {
		return int64(rnd%(2*uint32(sigma))) + mu - int64(sigma)
	}
	return tableScale(mu, sigma, table[rnd%uint32(len(table))])
}

// tableScale is mu + sigma*t/8192 computed as tabledist computes it: the
// fractional part of sigma rounded half away from zero, then C's truncating
// division.
func tableScale(mu int64, sigma int32, t int16) int64 {
	x := int64(sigma%DistScale) * int64(t)
	if x >= 0 {
		x += DistScale / 2
	} else {
		x -= DistScale / 2
	}
	return x/DistScale + int64(sigma/DistScale)*int64(t) + mu
}

// quantile maps u in [0,1] through the distribution; sigma > 0.
func quantile(mu int64, sigma int32, u float64, table []int16) int64 {
	if table == nil {
		w := 2 * int64(sigma)
		return mu - int64(sigma) + min(int64(u*float64(w)), w-1)
	}
	i := min(int(u*float64(len(table))), len(table)-1)
	return tableScale(mu, sigma, table[i])
}

// copulaRho returns the Gaussian correlation ρ for which the lag-1
// correlation of F⁻¹(Φ(z)) equals c, F being uniform (table nil) or the
// table's distribution.
func copulaRho(c float64, table []int16) float64 {
	switch {
	case c <= 0:
		return 0
	case c >= 1:
		return 1
	case table == nil:
		return 2 * math.Sin(math.Pi*c/6)
	}
	coef := hermiteCorr(table, 200)
	if coef == nil {
		return c
	}
	corr := func(rho float64) float64 {
		s, pw := 0.0, rho
		for _, a := range coef {
			s += a * pw
			pw *= rho
		}
		return s
	}
	lo, hi := 0.0, 1.0
	if corr(hi) <= c {
		return 1
	}
	for range 60 {
		mid := (lo + hi) / 2
		if corr(mid) < c {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// hermiteCorr returns a_k, k = 1..K, such that the correlation of g(Z1)
// and g(Z2), for standard normals of correlation ρ and g(z) =
// table[floor(Φ(z)*n)], is Σ a_k ρ^k (Mehler's formula). With h_k the
// normalised Hermite polynomials, a_k = b_k²/Var g with b_k = E[g(Z)h_k(Z)]
// = Σ_j (t_j - t_{j-1}) φ(z_j) h_{k-1}(z_j) / sqrt(k), z_j = Φ⁻¹(j/n),
// because ∫ h_k φ = -h_{k-1} φ / sqrt(k). It returns nil for a constant
// table.
func hermiteCorr(table []int16, K int) []float64 {
	n := len(table)
	var sum, sumSq float64
	for _, t := range table {
		sum += float64(t)
		sumSq += float64(t) * float64(t)
	}
	mean := sum / float64(n)
	variance := sumSq/float64(n) - mean*mean
	if variance <= 0 {
		return nil
	}
	sq := make([]float64, K+1)
	for k := range sq {
		sq[k] = math.Sqrt(float64(k))
	}
	b := make([]float64, K)
	for j := 1; j < n; j++ {
		dt := float64(table[j]) - float64(table[j-1])
		if dt == 0 {
			continue
		}
		z := math.Sqrt2 * math.Erfinv(2*float64(j)/float64(n)-1)
		w := dt * math.Exp(-z*z/2) / math.Sqrt(2*math.Pi)
		hPrev, h := 0.0, 1.0
		for k := 1; k <= K; k++ {
			b[k-1] += w * h / sq[k]
			hPrev, h = h, (z*h-sq[k-1]*hPrev)/sq[k]
		}
	}
	for k := range b {
		b[k] = b[k] * b[k] / variance
	}
	return b
}
