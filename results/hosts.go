package results

import "math"

// HostFairness is how evenly the load of one direction was shared among
// hosts: Jain's index of each host's sum of its load flows' means (see
// Fairness for a flow's figure), over the hosts of the side that has
// several (the servers of an rtt_fair run, which share one client). A
// host with more flows than another is meant to get more: the index says
// how the hosts fared, which is what a test of one flow pair per host
// (rtt_fair) asks.
type HostFairness struct {
	// Direction is "up" (client to server) or "down".
	Direction string `json:"direction"`
	// Side is "server" or "client": whose hosts are counted.
	Side string `json:"side"`
	// Jain is (Σx)²/(n·Σx²) over the hosts' sums x.
	Jain float64 `json:"jain"`
	// Hosts are the hosts counted, in the order of their first flow.
	Hosts []HostShare `json:"hosts"`
}

// HostShare is one host's part of its direction's load.
type HostShare struct {
	// Host is the host's name ("s2").
	Host string `json:"host"`
	// Flows are the IDs of its flows counted (Flow.ID).
	Flows []int `json:"flows"`
	// Mean is the sum of its flows' means, in Unit ("Mbits/s").
	Mean float64 `json:"mean"`
	Unit string  `json:"unit"`
	// Share is Mean over the sum of the direction's hosts' means.
	Share float64 `json:"share"`
}

// ClientHost returns the client the flow ran from: its Client, or c1 for
// a flow that names none (a document of one client and one server).
func (f *Flow) ClientHost() string { return orDefault(f.Client, "c1") }

// ServerHost returns the server the flow ran to: its Server, or s1.
func (f *Flow) ServerHost() string { return orDefault(f.Server, "s1") }

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// HostsSide returns the side whose hosts the run's load flows spread
// over ("server" or "client", the servers when both have as many), with
// those hosts in the order of their first flow; "" when the flows ran
// between one client and one server.
func (d *Document) HostsSide() (string, []string) {
	var clients, servers []string
	add := func(list []string, h string) []string {
		for _, x := range list {
			if x == h {
				return list
			}
		}
		return append(list, h)
	}
	for i := range d.Flows {
		f := &d.Flows[i]
		if f.Direction != "up" && f.Direction != "down" {
			continue
		}
		clients, servers = add(clients, f.ClientHost()), add(servers, f.ServerHost())
	}
	switch {
	case len(servers) >= 2 && len(servers) >= len(clients):
		return "server", servers
	case len(clients) >= 2:
		return "client", clients
	}
	return "", nil
}

// FairnessOverHosts returns, for each direction ("up" first) whose load
// flows (those FlowFairness counts) spread over two or more hosts of the
// HostsSide, the hosts' fairness. A run of one client and one server has
// none. It reads the summaries, as FlowFairness does.
func (d *Document) FairnessOverHosts() []HostFairness {
	side, _ := d.HostsSide()
	if side == "" {
		return nil
	}
	var out []HostFairness
	for _, ff := range d.FlowFairness() {
		var hosts []HostShare
		at := map[string]int{}
		for _, fs := range ff.Flows {
			f := d.flowByID(fs.ID)
			h := f.ServerHost()
			if side == "client" {
				h = f.ClientHost()
			}
			i, ok := at[h]
			if !ok {
				i = len(hosts)
				at[h] = i
				hosts = append(hosts, HostShare{Host: h, Unit: fs.Unit})
			}
			hosts[i].Flows = append(hosts[i].Flows, fs.ID)
			hosts[i].Mean += fs.Mean
		}
		means := make([]float64, len(hosts))
		for i, h := range hosts {
			means[i] = h.Mean
		}
		jain, shares, ok := jainOf(means)
		if !ok {
			continue
		}
		for i := range hosts {
			hosts[i].Share = shares[i]
		}
		out = append(out, HostFairness{Direction: ff.Direction, Side: side, Jain: jain, Hosts: hosts})
	}
	return out
}

// flowByID returns the flow with that ID, nil if there is none.
func (d *Document) flowByID(id int) *Flow {
	for i := range d.Flows {
		if d.Flows[i].ID == id {
			return &d.Flows[i]
		}
	}
	return nil
}

// BaseRTT returns the least round trip, in ms, of the probes between the
// flow's own hosts over the whole run, the lead and tail included (while
// the load runs, the queue adds to every probe: a 20 ms path shows 36 ms
// behind a busy FIFO); from the summary alone (its window's minimum)
// where the samples are not kept. It is the RTT of the flow's path
// without its queue, which in an rtt_fair run differs from host to host.
// false when no probe ran between those hosts, or none was answered.
func (d *Document) BaseRTT(f *Flow) (float64, bool) {
	best, ok := 0.0, false
	for i := range d.Flows {
		p := &d.Flows[i]
		if p.Direction != "both" || p.ClientHost() != f.ClientHost() || p.ServerHost() != f.ServerHost() {
			continue
		}
		s := d.series(p.Label)
		if s == nil || s.Unit != "ms" {
			continue
		}
		least := math.NaN()
		for _, x := range s.Samples {
			if !math.IsNaN(x.V) && !(x.V >= least) {
				least = x.V
			}
		}
		if len(s.Samples) == 0 && s.Summary.N > 0 {
			least = s.Summary.Min
		}
		if math.IsNaN(least) {
			continue
		}
		if !ok || least < best {
			best, ok = least, true
		}
	}
	return best, ok
}
