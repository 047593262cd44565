package traffic

import (
	"testing"

	"wanlab/internal/roottest"
	"wanlab/netns"
)

func TestMain(m *testing.M) { roottest.Main(m, netns.CleanStale) }
