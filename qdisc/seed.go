package qdisc

// DeriveSeed makes an independent seed from seed and k with splitmix64's
// finaliser, so that streams derived from one seed with different k (a
// direction, a discipline's position in its tree) are unrelated, and the
// same seed and k always give the same stream.
func DeriveSeed(seed, k uint64) uint64 {
	z := seed + k*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// PositionSeed is the seed of the discipline at position k of a tree (the
// root is 0, its child 1, ...) whose Env.Seed is seed: every random
// discipline draws from its own stream, so that two netems with jitter in
// one chain draw independent delays.
func PositionSeed(seed uint64, k int) uint64 { return DeriveSeed(seed, uint64(k)) }

// rootSeed is the seed of a discipline made on its own, as the root of a
// tree: PositionSeed(env.Seed, 0), env.Seed being 0 without an env.
func rootSeed(env *Env) uint64 {
	var seed uint64
	if env != nil {
		seed = env.Seed
	}
	return PositionSeed(seed, 0)
}
