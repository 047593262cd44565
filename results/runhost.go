package results

// RunHost is one host of a run's testbed of more than two hosts, or
// with access links (Run.Hosts): its name, its addresses, its access
// links and its default congestion control.
type RunHost struct {
	// Name is the host's name: "client", "server", or "c2", "s3" ...
	// (c1 is the client, s1 the server).
	Name string `json:"name"`
	// Addr4 and Addr6 are its addresses.
	Addr4 string `json:"addr4"`
	Addr6 string `json:"addr6"`
	// AccessUp and AccessDown are its access links at the start in tc
	// syntax, "direct" for one without qdiscs, "" for none.
	AccessUp   string `json:"access_up,omitempty"`
	AccessDown string `json:"access_down,omitempty"`
	// CC is its net.ipv4.tcp_congestion_control.
	CC string `json:"cc,omitempty"`
}
