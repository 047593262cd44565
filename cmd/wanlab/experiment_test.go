package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExperimentRefusesWhatRunRefuses: every option value that wanlab run
// refuses (exit 2) is refused in an experiment file's test entry too, at
// that option's line and naming its key, before anything runs: both go
// through testrun.PrepareGiven (issue 26 item 7: streams: 0 ran 4 flows and was
// recorded as 0; item 13: options that do not apply).
func TestExperimentRefusesWhatRunRefuses(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		test, key, value string
	}{
		{"tcp_nup", "streams", "0"},
		{"tcp_nup", "streams", "1000"},
		{"tcp_nup", "streams", "0x"},
		{"rrul", "streams", "3"},
		{"udp_flood", "udp_size", "0"},
		{"udp_flood", "udp_size", "70000"},
		{"udp_flood", "udp_rate", "fast"},
		{"tcp_upload", "udp_rate", "1M"},
		{"tcp_upload", "duration", "0"},
		{"tcp_upload", "duration", "ten"},
		{"tcp_upload", "duration", "-5s"},
		{"tcp_upload", "step", "0"},
		{"tcp_upload", "lead", "300ms"},
		{"ping", "lead", "1s"},
		{"tfrc_upload", "tx_qlen", "-3"},
		{"tcp_upload", "tx_qlen", "5"},
		{"tcp_upload", "cc", "warp9"},
		{"tcp_upload", "cc", "up=cubic,sideways=bbr"},
		{"tcp_upload", "cc", "up=cubic,up=bbr"},
		{"tcp_download", "cc", "up=cubic"},
		{"quic_upload", "cc", "cubic"},
		{"ping", "cc", "reno"},
		{"udp_flood", "cc", "cubic"},
		{"tcp_upload", "tos", "CS9"},
		{"tcp_upload", "sndbuf", "-1"},
		{"tcp_upload", "tcp_rmem", "1 2"},
		{"tcp_upload", "sysctls", "kernel.panic=1"},
		{"tcp_upload", "framing", "atm"},
		{"tcp_upload", "granularity", "skb"},
		{"tcp_upload", "profile", "moon"},
		{"tcp_upload", "aqm", "cake"},
		{"tcp_upload", "trace_up", filepath.Join(dir, "none.trace")},
		{"tcp_upload", "lab", "wl-nosuch-testbed"},
		{"tcp_upload", "server", "iperf3 -s"},
		{"tcp_upload", "ipv6", "maybe"},
		{"tcp_upload", "direct", "maybe"},
	} {
		flag := "--" + strings.ReplaceAll(c.key, "_", "-")
		if c.key == "sysctls" {
			flag = "--sysctl"
		}
		value := c.value
		_, errOut, code := runWanlab(t, "run", c.test, flag, value)
		if code != exitUsage {
			t.Errorf("wanlab run %s %s %q: exit %d (%s); want 2", c.test, flag, value, code, strings.TrimSpace(errOut))
			continue
		}
		quoted, _ := json.Marshal(c.value)
		file := filepath.Join(dir, "x.yaml")
		text := fmt.Sprintf("tests:\n  - test: %s\n    %s: %s\n", c.test, c.key, quoted)
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, errOut, code = runWanlab(t, "experiment", "run", file, "--dry-run")
		if want := file + ":3: " + c.key + ": "; code != exitUsage || !strings.Contains(errOut, want) {
			t.Errorf("experiment entry {test: %s, %s: %s}: exit %d, %q; want 2 and %q", c.test, c.key, quoted, code, errOut, want)
		}
	}
}

// TestShippedExamplesPass: every example experiment passes the whole
// check a run makes (each case's options through testrun.PrepareGiven), as
// --dry-run does without root.
func TestShippedExamplesPass(t *testing.T) {
	files, _ := filepath.Glob("../../examples/*.yaml")
	if len(files) == 0 {
		t.Fatal("no examples found")
	}
	for _, f := range files {
		out, errOut, code := runWanlab(t, "experiment", "run", f, "--dry-run")
		if code != exitOK || !strings.Contains(out, "runs") {
			t.Errorf("experiment run %s --dry-run: exit %d\n%s", f, code, errOut)
		}
	}
}

// TestExperimentListForOneValue: a list for an option that takes one value
// is refused at its line; it used to run with the last value alone.
func TestExperimentListForOneValue(t *testing.T) {
	file := filepath.Join(t.TempDir(), "x.yaml")
	os.WriteFile(file, []byte("tests:\n  - test: tcp_upload\n    duration: [10s, 20s]\n    sysctls: [net.ipv4.tcp_sack=0, net.ipv4.tcp_dsack=0]\n"), 0o644)
	_, errOut, code := runWanlab(t, "experiment", "run", file, "--dry-run")
	if want := file + ":3: duration: takes one value, and is given 2 (10s, 20s)"; code != exitUsage || !strings.Contains(errOut, want) || strings.Contains(errOut, "sysctls") {
		t.Errorf("exit %d, %q; want 2 and only %q", code, errOut, want)
	}
}
