package lab

import (
	"testing"

	"wanlab/qdisc"
)

// CheckChain builds a chain as the router would: netem's duplicate, which
// needs a packet pool, is a chain the router builds.
func TestCheckChain(t *testing.T) {
	if err := CheckChain([]qdisc.Spec{qdisc.NetemConfig{Limit: 1000, Duplicate: 0.01}}); err != nil {
		t.Errorf("netem duplicate 1%%: %v", err)
	}
	if err := CheckChain([]qdisc.Spec{qdisc.FQCoDelConfig{}, qdisc.NetemConfig{Limit: 1000}}); err == nil {
		t.Error("a child under fq_codel, which takes none, was accepted")
	}
}
