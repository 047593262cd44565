package experiment

import (
	"fmt"
	"strconv"
	"strings"
)

// Shard is the K-th of N disjoint slices of an experiment's cases. The
// zero Shard is the whole experiment.
//
// Case number c (counting from 1 in the canonical order) belongs to shard
// (c-1) mod N + 1: the assignment depends only on the file, never on the
// order runs are shuffled into, and dealing cases out in turn spreads a
// swept variable (say, a duration that grows along the grid) evenly over
// the machines.
type Shard struct {
	K, N int
}

// ParseShard reads "K/N" with 1 <= K <= N.
func ParseShard(s string) (Shard, error) {
	ks, ns, ok := strings.Cut(s, "/")
	k, err1 := strconv.Atoi(ks)
	n, err2 := strconv.Atoi(ns)
	if !ok || err1 != nil || err2 != nil || n < 1 || k < 1 || k > n {
		return Shard{}, fmt.Errorf("--shard %q: write K/N with 1 <= K <= N, e.g. --shard 2/4 for the second of four slices ('wanlab experiment sbatch' writes a Slurm job array whose task K runs shard K/N)", s)
	}
	return Shard{K: k, N: n}, nil
}

// Whole reports whether s is the whole experiment.
func (s Shard) Whole() bool { return s.N <= 1 }

// String returns "K/N", or "" for the whole experiment.
func (s Shard) String() string {
	if s.Whole() {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.K, s.N)
}

// Contains reports whether case number c belongs to the shard.
func (s Shard) Contains(c int) bool {
	return s.Whole() || (c-1)%s.N == s.K-1
}
