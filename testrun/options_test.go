package testrun

import (
	"flag"
	"os"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/options.md from Registry")

// examples are a value of every option that a run of some test takes, as
// its flag would give it: TestEveryOptionSetsOneField and
// TestOptionsApplyOrAreRefused set them. An option without one fails them.
var examples = map[string][]string{
	"test": {"tcp_upload"}, "duration": {"10s"}, "step": {"100ms"}, "lead": {"1s"}, "tail": {"1s"},
	"streams": {"2"}, "upload_streams": {"2"}, "download_streams": {"3"}, "delay": {"2s"},
	"markings": {"CS1,EF"}, "cc_algos": {"reno,cubic"}, "stream_delays": {"0;1"}, "labels": {"a,b"}, "ping_labels": {"near,far"},
	"udp_rate": {"20M"}, "udp_size": {"1000"}, "tx_qlen": {"0"},
	"server": {"true"}, "client": {"true"}, "server_wait": {"1s"}, "ipv6": {"true"},
	"cc": {"reno"}, "tos": {"EF"}, "ecn": {"true"}, "sndbuf": {"65536"}, "rcvbuf": {"65536"},
	"tcp_rmem": {"4096 131072 6291456"}, "tcp_wmem": {"4096 16384 4194304"}, "sysctls": {"net.ipv4.tcp_sack=0"},
	"seed": {"5"}, "title": {"x"}, "framing": {"ip"}, "granularity": {"gso"}, "dataplane": {"packet"},
	"clients": {"2"}, "servers": {"2"}, "access_up": {"c1=netem delay 1ms"}, "access_down": {"s1="}, "host_cc": {"c1=bbr"},
	"up": {"netem delay 1ms"}, "down": {"netem delay 2ms"}, "both": {"netem delay 3ms"},
	"up_script": {"DIR/up.tc"}, "down_script": {"DIR/down.tc"}, "script": {"DIR/both.tc"},
	"up_dev": {"eth1"}, "down_dev": {"eth0"}, "set": {"RATE=2mbit"},
	"trace_up": {"TRACE"}, "trace_down": {"TRACE"}, "at": {"1s", "netem delay 5ms"},
	"profile": {"lte"}, "aqm": {"fq_codel"}, "direct": {"true"}, "lab": {"wl-nosuch"},
	"pcap": {"DIR/x.pcap"}, "output": {"DIR/x.json.gz"}, "flent": {"DIR/x.flent.gz"}, "json": {"true"},
}

// setExample sets option key's example in o; at takes its time, then a
// chain for it to change.
func setExample(t *testing.T, o *Options, key, dir string) {
	t.Helper()
	op := LookupOption(key)
	vals := examples[key]
	if len(vals) == 0 {
		t.Fatalf("option %s has no example: add one to examples", key)
	}
	for i, v := range vals {
		v = strings.ReplaceAll(v, "DIR", dir)
		if key == "at" && i == 1 {
			op = LookupOption("up")
		}
		if err := op.Set(o, v); err != nil {
			t.Fatalf("%s %q: %v", op.Name(), v, err)
		}
	}
}

// Every field of Options is one option's: setting each option's example
// changes exactly one field, and no two options change the same one
// (--up, --down and --both also fill --at's changes, which is --at's
// field).
func TestEveryOptionSetsOneField(t *testing.T) {
	rt := reflect.TypeFor[Options]()
	owner := map[string]string{}
	seen := map[string]bool{}
	for _, op := range Registry() {
		if seen[op.Key] || op.Key == "" || op.Help == "" && op.Flag != "" || op.Recorded == "" {
			t.Errorf("option %q is listed twice or incomplete: %+v", op.Key, op)
		}
		seen[op.Key] = true
		if strings.Contains(op.Help, "`") {
			t.Errorf("--%s: its help has a backquote, which pflag takes for the name of its value", op.Flag)
		}
		o, d := Defaults(), Defaults()
		setExample(t, &o, op.Key, t.TempDir())
		var changed []string
		for i := range rt.NumField() {
			if !reflect.DeepEqual(reflect.ValueOf(o).Field(i).Interface(), reflect.ValueOf(d).Field(i).Interface()) {
				changed = append(changed, rt.Field(i).Name)
			}
		}
		if op.Key == "at" {
			changed = changed[:1] // its chain, set by --up, goes to the change
		}
		if len(changed) != 1 {
			t.Errorf("option %s sets fields %v, want one", op.Key, changed)
			continue
		}
		if other, ok := owner[changed[0]]; ok {
			t.Errorf("options %s and %s both set Options.%s", other, op.Key, changed[0])
		}
		owner[changed[0]] = op.Key
		if !op.inUse(&o) || op.Texts(&o) == nil {
			t.Errorf("option %s: its example %q does not count as given", op.Key, examples[op.Key])
		}
	}
	for i := range rt.NumField() {
		if _, ok := owner[rt.Field(i).Name]; !ok {
			t.Errorf("Options.%s is no option's: add it to the registry", rt.Field(i).Name)
		}
	}
}

// docs/options.md is Markdown() (regenerate with -update), with a row per
// option that holds its flag, its key and its help.
func TestOptionsDoc(t *testing.T) {
	const path = "../docs/options.md"
	want := Markdown()
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("%s differs from testrun.Registry: regenerate it with `go test ./testrun -run TestOptionsDoc -update`", path)
	}
	for _, op := range Registry() {
		if row := "\n| " + op.flagCell() + " | `" + op.Key + "` | "; !strings.Contains(want, row) || !strings.Contains(want, MarkdownText(op.Usage())) {
			t.Errorf("docs/options.md has no row %q with the help %q", row, op.Usage())
		}
	}
	if n := strings.Count(want, "\n| `"); n != len(Registry()) {
		t.Errorf("the table has %d rows, Registry %d entries", n, len(Registry()))
	}
}
