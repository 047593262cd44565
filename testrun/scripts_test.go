package testrun

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"wanlab/qdisc"
	"wanlab/tcspec"
)

// A script of tc lines gives a direction's path: seed 002's router
// script, by device, gives both (netem as the root, tbf on its class
// 1:1); an htb script one; the results record the tree as tc lines.
func TestPrepareScripts(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	seed := write("seed002.sh", `# the router: netem delay and a token bucket on both interfaces
tc qdisc add dev eth0 root handle 1:0 netem delay 20ms
tc qdisc add dev eth0 parent 1:1 handle 10: tbf rate $RATE buffer 10000 limit 30000
tc qdisc add dev eth1 root handle 1:0 netem delay 20ms
tc qdisc add dev eth1 parent 1:1 handle 10: tbf rate $RATE buffer 10000 limit 30000
`)
	o := Defaults()
	o.Test, o.Script, o.UpDev, o.DownDev, o.ScriptVars = "tcp_upload", seed, "eth1", "eth0", []string{"RATE=2mbit"}
	s, err := Prepare(o, tcspec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := tcspec.ParseChain("netem delay 20ms; tbf rate 2mbit buffer 10000 limit 30000", tcspec.Options{})
	if !reflect.DeepEqual(s.Up, want) || !reflect.DeepEqual(s.Down, want) {
		t.Errorf("chains %#v, %#v; want %#v", s.Up, s.Down, want)
	}
	tree := write("tree.tc", `tc qdisc add dev wan root handle 1: htb default 20
tc class add dev wan parent 1: classid 1:1 htb rate 10mbit
tc class add dev wan parent 1:1 classid 1:10 htb rate 1mbit ceil 10mbit
tc class add dev wan parent 1:1 classid 1:20 htb rate 9mbit ceil 10mbit
tc filter add dev wan parent 1: protocol ip prio 1 u32 match ip dsfield 0xb8 0xfc flowid 1:10
`)
	o = Defaults()
	o.Test, o.UpScript = "tcp_upload", tree
	if s, err = Prepare(o, tcspec.Options{}); err != nil {
		t.Fatal(err)
	}
	if h, ok := s.Up[0].(qdisc.HTBConfig); !ok || len(h.Classes) != 3 || len(h.Filters) != 1 || s.Down != nil {
		t.Errorf("up %#v, down %#v", s.Up, s.Down)
	}
	if !strings.HasPrefix(s.UpText, "tc qdisc add dev DEV root handle 1: htb default 20; tc class add dev DEV parent 1: classid 1:1 htb rate 10Mbit") {
		t.Errorf("UpText = %q", s.UpText)
	}
	if back, err := tcspec.ParseChain(s.UpText, tcspec.Options{}); err != nil || !reflect.DeepEqual(back, s.Up) {
		t.Errorf("UpText does not read back: %v", err)
	}
	fifo := filepath.Join(dir, "fifo.tc")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	bad := write("bad.tc", "tc qdisc add dev wan root handle 1: htb\n\ntc class add dev wan parent 1: classid 1:1 htb ceil 10mbit\n")
	for _, c := range []struct {
		set       func(o *Options)
		key, want string
	}{
		{func(o *Options) { o.UpScript, o.Up = tree, "netem delay 1ms" }, "up_script", "--up-script and --up both give"},
		{func(o *Options) { o.DownScript, o.Both = tree, "netem delay 1ms" }, "down_script", "--down-script and --both both give"},
		{func(o *Options) { o.UpDev = "eth0" }, "up_dev", "give --script FILE"},
		{func(o *Options) { o.Script = seed }, "script", "--up-dev DEV and --down-dev DEV"},
		{func(o *Options) { o.Script, o.UpDev, o.DownDev = seed, "eth0", "eth0" }, "up_dev", "a device of its own"},
		{func(o *Options) {
			o.Script, o.UpDev, o.DownDev, o.ScriptVars = seed, "eth1", "eth2", []string{"RATE=1mbit"}
		}, "script", "line 2"},
		{func(o *Options) { o.Script, o.UpDev, o.DownDev = seed, "eth1", "eth0" }, "script", "$RATE is not set: give its value with --set RATE=VALUE"},
		{func(o *Options) { o.ScriptVars = []string{"A=1"} }, "set", "none is given"},
		{func(o *Options) { o.UpScript, o.ScriptVars = tree, []string{"1"} }, "set", "give NAME=VALUE"},
		{func(o *Options) { o.UpScript, o.ScriptVars = seed, []string{"RATE=1mbit"} }, "up_script", "configures dev eth0 (line 2) and dev eth1"},
		{func(o *Options) { o.UpScript = bad }, "up_script", "line 3"},
		{func(o *Options) { o.UpScript = filepath.Join(dir, "none") }, "up_script", "no such file"},
		// A FIFO with no writer is refused, not waited on; a device and a
		// directory are not read.
		{func(o *Options) { o.UpScript = fifo }, "up_script", "is a FIFO, not a regular file"},
		{func(o *Options) { o.DownScript = "/dev/zero" }, "down_script", "is a character device, not a regular file"},
		{func(o *Options) { o.Script, o.UpDev, o.DownDev = dir, "eth1", "eth0" }, "script", "is a directory, not a regular file"},
		{func(o *Options) { o.UpScript, o.AQM = tree, "fq_codel" }, "aqm", "tree of classes"},
		{func(o *Options) { o.UpScript, o.Profile = tree, "lte" }, "profile", "the scripts"},
	} {
		o := Defaults()
		o.Test = "tcp_upload"
		c.set(&o)
		_, err := Prepare(o, tcspec.Options{})
		if !IsBadOption(err) || keyOf(err) != c.key || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v (key %q); want key %q and %q", err, keyOf(err), c.key, c.want)
		}
	}
}
