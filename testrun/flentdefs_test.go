package testrun

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"wanlab/catalog"
	"wanlab/results"
)

// flentDefsScript loads Flent's own test definitions, as `flent` does
// before it runs a test (settings.load_test), for LENGTH 60 s and DELAY
// 5 s, and prints each data set's runner, netperf test, delay, length,
// marking, congestion control, units and host, by test, as JSON. An
// argument is a test, optionally followed by ":" and test parameters
// joined by ";" ("rrul_var:bidir_streams=3"), and by "@" and the hosts
// joined by "," (Flent's -H, localhost if none: "rtt_fair_var:@s1,s2").
const flentDefsScript = `
import sys, json, copy
from flent.settings import parser, Settings, DEFAULT_SETTINGS
out = {}
for arg in sys.argv[1:]:
    name, _, rest = arg.partition(":")
    params, _, hosts = rest.partition("@")
    argv = ["-l", "60", "-d", "5"]
    for h in (hosts or "localhost").split(","):
        argv += ["-H", h]
    for p in filter(None, params.split(";")):
        argv += ["--test-parameter", p]
    try:
        # A fresh TEST_PARAMETERS: --test-parameter updates the dict it
        # finds, which would otherwise carry one test's into the next.
        ns = Settings(copy.deepcopy(DEFAULT_SETTINGS))
        ns.TEST_PARAMETERS = {}
        s = parser.parse_args(argv + [name], namespace=ns)
        s.process_args()
        s.load_test(informational=True)
    except Exception as e:
        out[name] = {"error": str(e)}
        continue
    if not hasattr(s, "DATA_SETS"):
        out[name] = {"error": "Flent has no test " + name}
        continue
    sets = []
    for k, v in s.DATA_SETS.items():
        d = {kk: v.get(kk) for kk in ("runner", "test", "delay", "length", "marking", "cong_control", "units", "host")}
        d["name"] = k
        sets.append(d)
    out[name] = {"description": s.DESCRIPTION, "plot": s.DEFAULTS.get("PLOT"), "total": s.TOTAL_LENGTH, "data_sets": sets}
print(json.dumps(out))
`

// flentDef is one test as Flent defines it.
type flentDef struct {
	Error       string  `json:"error"`
	Description string  `json:"description"`
	Plot        string  `json:"plot"`
	Total       float64 `json:"total"`
	DataSets    []struct {
		Name        string   `json:"name"`
		Runner      string   `json:"runner"`
		Test        string   `json:"test"`
		Delay       *float64 `json:"delay"`
		Length      *float64 `json:"length"`
		Marking     string   `json:"marking"`
		CongControl string   `json:"cong_control"`
		Units       string   `json:"units"`
		Host        string   `json:"host"`
	} `json:"data_sets"`
}

// flentDefs returns the installed Flent's definitions of the tests, each
// with the catalog options its parameters match: it runs the Python
// interpreter that runs flent, on the directory the flent program lives
// in (Debian's /usr/share/flent).
func flentDefs(t *testing.T, tests map[string]catalog.Options) map[string]flentDef {
	t.Helper()
	bin, err := exec.LookPath("flent")
	if err != nil {
		t.Skip("skipped: flent is not installed (apt-get install -y flent)")
	}
	if bin, err = filepath.EvalSymlinks(bin); err != nil {
		t.Fatal(err)
	}
	head, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(head), "\n")
	interp, ok := strings.CutPrefix(first, "#!")
	if !ok {
		t.Fatalf("%s does not start with #!: %q", bin, first)
	}
	args := []string{"-c", flentDefsScript}
	for name, o := range tests {
		arg := name
		params := perStreamParams(o.PerStream)
		switch name {
		case "tcp_nup", "tcp_ndown", "rrul_var":
			param := map[string]string{"tcp_nup": "upload_streams", "tcp_ndown": "download_streams", "rrul_var": "bidir_streams"}[name]
			params = append(params, fmt.Sprintf("%s=%d", param, o.Streams))
		case "rrul_be_nflows":
			params = append(params, fmt.Sprintf("upload_streams=%d", o.UploadStreams), fmt.Sprintf("download_streams=%d", o.DownloadStreams))
		}
		arg += ":" + strings.Join(params, ";")
		if tt, err := catalog.Lookup(name, o); err == nil && tt.Servers > 0 {
			// Flent's HOSTS: the servers, which the series are named after.
			arg += "@" + strings.Join(serverNames(tt.Servers), ",")
		}
		args = append(args, arg)
	}
	home := t.TempDir()
	cmd := exec.Command(strings.Fields(interp)[0], args...)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Dir(bin), "HOME="+home, "MPLCONFIGDIR="+home)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("loading Flent's test definitions: %v\n%s", err, stderr.String())
	}
	defs := map[string]flentDef{}
	if err := json.Unmarshal(out, &defs); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return defs
}

// perStreamParams are Flent's test parameters of ps: "markings=CS1,EF",
// "stream_delays=0,2" (whole seconds).
func perStreamParams(ps catalog.PerStream) []string {
	var params []string
	add := func(name string, list []string) {
		if len(list) > 0 {
			params = append(params, name+"="+strings.Join(list, ","))
		}
	}
	add("markings", ps.Markings)
	add("cc_algos", ps.CCAlgos)
	add("labels", ps.Labels)
	add("ping_labels", ps.PingLabels)
	var delays []string
	for _, d := range ps.Delays {
		delays = append(delays, fmt.Sprint(int(d.Seconds())))
	}
	add("stream_delays", delays)
	return params
}

// serverNames are the names of n servers, s1 to sn.
func serverNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("s%d", i+1)
	}
	return names
}

// TestCatalogMatchesFlent checks every Flent test of the catalog against
// the definition the installed Flent 2.1.1 loads for it (LENGTH 60 s,
// DELAY 5 s): the same load flows by series name, each with its
// direction (TCP_STREAM up, TCP_MAERTS down), congestion control, DSCP
// and start and stop ('delay', and 'delay' plus 'length'); the same
// probes, ICMP (ping) or UDP (udp_rtt, UDP_RR), with their marks; the
// series Flent computes, which results computes too; the run's length
// (TOTAL_LENGTH); and, for the tests of mixed flows, the description and
// the default plot. The rrul_N_up_M_down tests, from Flent's pull request
// #61, are tests Flent 2.1.1 does not have.
func TestCatalogMatchesFlent(t *testing.T) {
	if raceEnabled {
		t.Skip("skipped under the race detector: it checks data against Flent's, and runs no code of ours concurrently")
	}
	opts := map[string]catalog.Options{}
	for _, n := range catalog.Names() {
		o := catalog.Options{}
		switch n {
		case "rrul_var":
			o.Streams = 3
		case "rrul_be_nflows":
			o.UploadStreams, o.DownloadStreams = 2, 3
		case "tcp_nup", "tcp_ndown":
			o.Streams = 5
		}
		if catalog.VarServers(n) {
			o.Servers = 3
		}
		// Flent's per-stream parameters, where a test takes them: marks,
		// congestion controls, late starts and labels of some streams
		// (rtt_fair's own marks and labels override the ones given). Flent
		// splits a list on "," and ";" and drops empty entries.
		switch n {
		case "tcp_nup", "tcp_ndown", "tcp_4up", "tcp_6down":
			o.PerStream = catalog.PerStream{Markings: []string{"CS1", "CS0", "EF"}, CCAlgos: []string{"reno", "cubic"}, Delays: []time.Duration{0, 2 * time.Second}}
		case "rrul_var":
			o.PerStream = catalog.PerStream{Markings: []string{"EF", "CS1"}, CCAlgos: []string{"cubic", "reno"}, Labels: []string{"voice"}, Delays: []time.Duration{3 * time.Second}}
		case "rtt_fair", "rtt_fair_up":
			o.PerStream = catalog.PerStream{Markings: []string{"EF"}, Labels: []string{"X"}, CCAlgos: []string{"reno"}, Delays: []time.Duration{0, time.Second}}
		case "rtt_fair_var", "rtt_fair_var_down":
			o.PerStream = catalog.PerStream{Markings: []string{"CS1"}, Labels: []string{"A", "B"}, PingLabels: []string{"P"}, Delays: []time.Duration{4 * time.Second}}
		}
		if tt, err := catalog.Lookup(n, o); err == nil && tt.Flent {
			opts[n] = o
		}
	}
	defs := flentDefs(t, opts)
	const delay, length = 5 * time.Second, 60 * time.Second
	mixing := false
	checked := 0
	for _, name := range catalog.Names() {
		o, ok := opts[name]
		if !ok {
			continue
		}
		if name == "tcp_1up" {
			mixing = true // the tests from here on are the mixed flows'
		}
		tt, _ := catalog.Lookup(name, o)
		def := defs[name]
		var up, down int
		if _, err := fmt.Sscanf(name, "rrul_%d_up_%d_down", &up, &down); err == nil {
			if def.Error != "Flent has no test "+name {
				t.Errorf("%s: Flent 2.1.1 loads it (%q)?", name, def.Error)
			}
			continue
		}
		if def.Error != "" {
			t.Errorf("%s: Flent: %s", name, def.Error)
			continue
		}
		checked++
		if mixing && (def.Description != tt.Description || def.Plot != tt.Plot) {
			t.Errorf("%s: description %q and plot %s; Flent's are %q and %s", name, tt.Description, tt.Plot, def.Description, def.Plot)
		}
		total := delay + length + delay
		switch {
		case tt.Scheduled():
			total = tt.Length(delay, length)
		case tt.NoLoad:
			total = length // ping: no lead or tail
		}
		if time.Duration(def.Total*float64(time.Second)) != total {
			t.Errorf("%s: the run lasts %v; Flent's TOTAL_LENGTH is %vs", name, total, def.Total)
		}
		flows := map[string]catalog.Flow{}
		for _, f := range tt.Flows {
			flows[f.Series] = f
		}
		probes := map[string]catalog.Probe{}
		for _, p := range tt.Probes {
			probes[p.Series] = p
		}
		var computed []string
		seen := 0
		for _, ds := range def.DataSets {
			tos := uint8(0)
			if m, _, _ := strings.Cut(ds.Marking, ","); m != "" {
				d, ok := catalog.DSCP(m)
				if !ok {
					t.Fatalf("%s: %s: Flent's marking %q", name, ds.Name, ds.Marking)
				}
				tos = d << 2
			}
			switch {
			case ds.Runner == "average" || ds.Runner == "sum" || ds.Runner == "fairness":
				computed = append(computed, ds.Name)
			case ds.Runner == "netperf_demo" && (ds.Test == "TCP_STREAM" || ds.Test == "TCP_MAERTS") || ds.Runner == "iperf_csv":
				seen++
				f, ok := flows[ds.Name]
				if !ok {
					t.Errorf("%s: no flow %q", name, ds.Name)
					continue
				}
				dir, tr := catalog.Up, catalog.TCP
				if ds.Test == "TCP_MAERTS" {
					dir = catalog.Down
				}
				if ds.Runner == "iperf_csv" {
					tr = catalog.UDPFlood // udp_flood's iperf -u
				}
				start := 0.0
				if ds.Delay != nil {
					start = *ds.Delay
				}
				got := fmt.Sprintf("%v cc %q tos %#x from %v to %v", f.Dir, f.CC, f.Mark.TOS(), f.Start.At(delay, length).Seconds(), f.Stop.At(delay, length).Seconds())
				want := fmt.Sprintf("%v cc %q tos %#x from %v to %v", dir, ds.CongControl, tos, start, start+*ds.Length)
				if tt.Servers > 0 {
					_, sv := f.Hosts()
					got += " to " + sv.String()
					want += " to " + ds.Host
				}
				if got != want || f.Transport != tr {
					t.Errorf("%s: %s: %s; Flent's: %s", name, ds.Name, got, want)
				}
			case ds.Runner == "ping" || ds.Runner == "udp_rtt" || ds.Runner == "netperf_demo" && ds.Test == "UDP_RR":
				seen++
				p, ok := probes[ds.Name]
				kind := catalog.UDP
				if ds.Runner == "ping" {
					kind = catalog.ICMP
				}
				if _, sv := p.Hosts(); tt.Servers > 0 && sv.String() != ds.Host {
					t.Errorf("%s: probe %q goes to %v; Flent's to %s", name, ds.Name, sv, ds.Host)
				}
				if !ok || p.Kind != kind || p.Mark.TOS() != tos {
					t.Errorf("%s: probe %q: %+v; Flent's: %v, tos %#x", name, ds.Name, p, kind, tos)
				}
			default:
				t.Errorf("%s: %s: Flent's runner %s %s is none the catalog knows", name, ds.Name, ds.Runner, ds.Test)
			}
		}
		if seen != len(tt.Flows)+len(tt.Probes) {
			t.Errorf("%s: %d flows and probes; Flent's test has %d", name, len(tt.Flows)+len(tt.Probes), seen)
		}
		// Flent 2.3 added the fairness of tcp_nup's and tcp_ndown's flows,
		// which wanlab computes for them.
		ours := slices.DeleteFunc(results.FlentComputed(name), func(c string) bool {
			return strings.HasSuffix(c, " fairness") && !slices.Contains(computed, c)
		})
		if !slices.Equal(ours, computed) {
			t.Errorf("%s: computes %q; Flent computes %q", name, ours, computed)
		}
	}
	if checked < 30 {
		t.Errorf("checked %d tests", checked)
	}
	t.Logf("%d tests agree with Flent's definitions", checked)
}
