package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"wanlab/experiment"
	"wanlab/netns"
	"wanlab/results"
)

// cliFor runs the binary with a time limit of its own (an experiment runs
// for minutes) and returns its output and exit status.
func cliFor(t *testing.T, limit time.Duration, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return cliForIn(t, limit, nil, args...)
}

// cliForIn is cliFor with the binary run inside the namespace ns (nil:
// this process's own).
func cliForIn(t *testing.T, limit time.Duration, ns *netns.Handle, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, wanlabBin(t), args...)
	run := cmd.Run
	if ns != nil {
		nc := netns.CommandContext(ctx, ns, wanlabBin(t), args...)
		cmd, run = nc.Cmd, nc.Run
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("wanlab %q: %v", args, err)
	}
	return out.String(), errOut.String(), code
}

// TestExperimentE1Quick runs the shipped E1 with --quick (30 short runs:
// six delays, 0 to 100 ms, × UDP, Reno, CUBIC, TFRC, QUIC at a fixed delay)
// and lays it out as the 2008 measurement's table: a row per delay, a
// column per transport.
func TestExperimentE1Quick(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "e1")
	_, errOut, code := cliFor(t, 5*time.Minute, "experiment", "run", "../../examples/e1.yaml", "--quick", "-o", dir)
	if code != 0 {
		t.Fatalf("experiment run: exit %d\n%s", code, errOut)
	}
	ix, err := experiment.ReadIndex(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n := ix.Counts(); n[experiment.StatusComplete] != 30 || len(ix.Cases) != 30 || !ix.Quick {
		t.Fatalf("index: %v over %d cases (quick %v)", n, len(ix.Cases), ix.Quick)
	}
	// Each results file carries the case's path, the derived seed and the
	// command that makes the run again.
	c := ix.Cases[0]
	doc, err := results.ReadFile(filepath.Join(dir, c.Runs[0].File))
	if err != nil {
		t.Fatal(err)
	}
	if doc.Run.Seed != c.Runs[0].Seed || doc.Run.Path.Up != c.Path.Up || doc.Run.Test != c.Runs[0].Test || doc.Run.DurationS != 3 {
		t.Errorf("results of %s: seed %d path %q test %s duration %v; index: seed %d path %q test %s",
			c.Runs[0].File, doc.Run.Seed, doc.Run.Path.Up, doc.Run.Test, doc.Run.DurationS, c.Runs[0].Seed, c.Path.Up, c.Runs[0].Test)
	}
	if argv := strings.Join(doc.Run.Argv, " "); !strings.HasPrefix(argv, "wanlab run "+c.Runs[0].Test+" --up tbf rate 100mbit ") || !strings.Contains(argv, "--seed "+strconv.FormatUint(c.Runs[0].Seed, 10)) {
		t.Errorf("recorded command %q", argv)
	}

	out, errOut, code := cliFor(t, time.Minute, "table", dir, "--format", "csv")
	if code != 0 {
		t.Fatalf("table: exit %d\n%s", code, errOut)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatalf("table --format csv: %v\n%s", err, out)
	}
	if h := strings.Join(rows[0], ","); !strings.HasPrefix(h, "delay,transport=udp,") || !strings.Contains(h, "transport=reno,") || !strings.Contains(h, "transport=cubic,") ||
		!strings.Contains(h, "transport=tfrc,") || !strings.Contains(h, "transport=quic,") {
		t.Fatalf("table header %q", h)
	}
	if len(rows) != 7 {
		t.Fatalf("table has %d delay rows, want 6 (0 ms to 100 ms):\n%s", len(rows)-1, out)
	}
	for _, r := range rows[1:] {
		for j, h := range rows[0] {
			if !strings.HasPrefix(h, "transport=") || strings.Contains(h, " ") {
				continue
			}
			// A goodput through 100BASE-TX: above nothing, below what
			// the wire carries of UDP's payload (95.7 Mbit/s: each frame
			// costs 24 bytes more than the router counts). UDP is not held
			// back by a window: it fills the link whatever the delay
			// (TCP's 3-second figures are too short to judge).
			v, err := strconv.ParseFloat(r[j], 64)
			if err != nil || v <= 0 || v > 96 {
				t.Errorf("delay %s, %s: %q Mbit/s is not a goodput through 100BASE-TX", r[0], h, r[j])
			}
			if h == "transport=udp" && v < 50 {
				t.Errorf("delay %s: UDP got %v Mbit/s through a 100 Mbit/s link", r[0], v)
			}
		}
	}
	graph := filepath.Join(t.TempDir(), "e1.png")
	text, errOut, code := cliFor(t, time.Minute, "table", dir, "--plot", graph)
	t.Logf("wanlab table:\n%s", text)
	if code != 0 || !strings.Contains(text, "delay \\ transport") || !strings.Contains(text, "100ms") {
		t.Errorf("text table: exit %d\n%s%s", code, text, errOut)
	}
	f, err := os.Open(graph)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if cfg, err := png.DecodeConfig(f); err != nil || cfg.Width != 1200 || cfg.Height != 800 {
		t.Errorf("--plot: %v, %dx%d", err, cfg.Width, cfg.Height)
	}
}

const resumeExperiment = `
name: resume
vars:
  delay: [5ms, 10ms, 15ms, 20ms]
path:
  both: "netem delay ${delay}"
tests:
  - test: tcp_upload
    duration: 2s
    lead: 1s
    tail: 1s
`

// TestExperimentResumeAfterSigkill kills an experiment midway with SIGKILL
// and runs it again: the second run makes only the runs that were missing,
// leaves the complete ones as they were, and leaves no temporary behind.
func TestExperimentResumeAfterSigkill(t *testing.T) {
	bin := wanlabBin(t)
	work := t.TempDir()
	file := filepath.Join(work, "resume.yaml")
	if err := os.WriteFile(file, []byte(resumeExperiment), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(work, "out")
	cmd := exec.Command(bin, "experiment", "run", file, "-o", dir)
	var firstErr bytes.Buffer
	cmd.Stderr = &firstErr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := cmd.Process.Pid
	deadline := time.Now().Add(90 * time.Second)
	complete := 0
	for complete < 2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		if ix, err := experiment.ReadIndex(dir); err == nil {
			complete = ix.Counts()[experiment.StatusComplete]
		}
	}
	if complete < 2 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("two runs did not complete in time:\n%s", firstErr.String())
	}
	// The third run is under way: kill it in the middle.
	time.Sleep(1500 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	ix, err := experiment.ReadIndex(dir)
	if err != nil {
		t.Fatal(err)
	}
	done := map[string]os.FileInfo{}
	for _, c := range ix.Cases {
		for _, r := range c.Runs {
			if fi, err := os.Stat(filepath.Join(dir, r.File)); err == nil {
				if r.Status != experiment.StatusComplete {
					t.Errorf("%s exists but the index says %s", r.File, r.Status)
				}
				done[r.File] = fi
			}
		}
	}
	if len(done) != 2 {
		t.Fatalf("after the kill %d results files exist, want 2:\n%s", len(done), firstErr.String())
	}

	_, errOut, code := cliFor(t, 2*time.Minute, "experiment", "run", file, "-o", dir)
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s", code, errOut)
	}
	var ran []string
	for _, l := range strings.Split(errOut, "\n") {
		if strings.HasPrefix(l, "[") {
			ran = append(ran, l)
		}
	}
	if len(ran) != 2 || !strings.HasPrefix(ran[0], "[3/4] case 3 of 4: delay=15ms") || !strings.HasPrefix(ran[1], "[4/4] case 4 of 4: delay=20ms") {
		t.Errorf("the resume ran:\n%s\nwant only cases 3 and 4", strings.Join(ran, "\n"))
	}
	ix, err = experiment.ReadIndex(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n := ix.Counts(); n[experiment.StatusComplete] != 4 {
		t.Errorf("after the resume: %v", n)
	}
	for name, before := range done {
		after, err := os.Stat(filepath.Join(dir, name))
		if err != nil || !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) {
			t.Errorf("%s was written again by the resume", name)
		}
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		if e.Name() != experiment.LockName {
			names = append(names, e.Name())
		}
	}
	if len(names) != 5 {
		t.Errorf("the directory holds %v, want the index and 4 results files (and the lock)", names)
	}
	// The killed process's testbed is gone: the next run cleaned it up.
	states, _ := netns.Testbeds()
	for _, st := range states {
		if strings.HasSuffix(st.Name, "-"+strconv.Itoa(killed)) {
			t.Errorf("the killed run's testbed %s is still on record", st.Name)
		}
	}
}

// TestExperimentBadFiles: a malformed experiment file exits 2 with the
// file, the line and the fix, before anything runs or is created.
func TestExperimentBadFiles(t *testing.T) {
	work := t.TempDir()
	for _, c := range []struct {
		name, text, want string
	}{
		{"yaml", "vars:\n  delay: [10ms, 30ms\ntests: [{test: ping}]\n", "bad.yaml:3: not valid YAML"},
		{"unknown key", "vars: {delay: [10ms]}\ntests:\n  - test: tcp_upload\n    duratoin: 2s\n", `bad.yaml:4: unknown key "duratoin" in a test entry: did you mean "duration"?`},
		{"undefined var", "vars: {delay: [10ms]}\npath: {both: \"netem delay ${dealy}\"}\ntests: [{test: ping}]\n", "bad.yaml:2: path up: ${dealy} is not defined: did you mean ${delay}?"},
		{"tc refuses", "vars: {rate: [10mbit, 10mbz]}\npath: {both: \"tbf rate ${rate} burst 32k latency 50ms\"}\ntests: [{test: ping}]\n", "bad.yaml:2: path up: tbf: \"rate 10mbz\": bad rate"},
		{"bad option", "tests:\n  - test: tcp_upload\n    duration: ten\n", "bad.yaml:3: duration:"},
		{"bad cc", "tests:\n  - test: tcp_upload\n    cc: vegass\n", "bad.yaml:3: cc:"},
		{"unknown test", "tests:\n  - test: tcp_uplaod\n", "bad.yaml:2:"},
	} {
		file := filepath.Join(work, "bad.yaml")
		os.WriteFile(file, []byte(c.text), 0o644)
		dir := filepath.Join(work, "out-"+strings.ReplaceAll(c.name, " ", "-"))
		_, errOut, code := cliFor(t, time.Minute, "experiment", "run", file, "-o", dir)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and %q", c.name, code, errOut, c.want)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: the results directory was created", c.name)
		}
	}
}

// TestRunSweep: wanlab run --sweep runs every value into a results
// directory, each run with its own chain, and prints the table.
func TestRunSweep(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sweep")
	out, errOut, code := cliFor(t, 2*time.Minute, "run", "tcp_upload", "--sweep", "delay=5ms,40ms",
		"--up", "netem delay ${delay}; tbf rate 20mbit burst 32k latency 50ms", "--duration", "2s", "--lead", "1s", "--tail", "1s", "-o", dir)
	if code != 0 {
		t.Fatalf("run --sweep: exit %d\n%s", code, errOut)
	}
	ix, err := experiment.ReadIndex(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ix.Cases) != 2 || ix.Counts()[experiment.StatusComplete] != 2 || !strings.Contains(ix.File.Content, "delay:") {
		t.Fatalf("index: %d cases, %v, file:\n%s", len(ix.Cases), ix.Counts(), ix.File.Content)
	}
	var rtts []float64
	for i, want := range []string{"netem limit 1000 delay 5ms; tbf rate 20Mbit", "netem limit 1000 delay 40ms; tbf rate 20Mbit"} {
		doc, err := results.ReadFile(filepath.Join(dir, ix.Cases[i].Runs[0].File))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(doc.Run.Path.Up, want) {
			t.Errorf("case %d ran through %q, want %q", i+1, doc.Run.Path.Up, want)
		}
		for _, s := range doc.Series {
			if s.Name == "Ping (ms) ICMP" {
				rtts = append(rtts, s.Summary.Median)
			}
		}
	}
	// The delay differs by 35 ms one way, so the ping does by at least that.
	if len(rtts) != 2 || rtts[1]-rtts[0] < 35 {
		t.Errorf("ping medians %v: the swept delay did not reach the path", rtts)
	}
	if !strings.Contains(out, "tcp_upload-sweep: mean of TCP upload (Mbits/s)") || !strings.Contains(out, "\n5ms ") || !strings.Contains(out, "\n40ms ") {
		t.Errorf("table:\n%s", out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "tcp_upload", "--sweep", "delay"}, "write VAR=V1,V2"},
		{[]string{"run", "--sweep", "d=1ms"}, "--sweep needs a test"},
		{[]string{"run", "tcp_upload", "--sweep", "d=1ms", "--up", "netem delay ${dd}"}, "${dd} is not defined: did you mean ${d}?"},
		{[]string{"run", "tcp_upload", "--sweep", "d=1ms", "--json"}, "--json"},
	} {
		_, errOut, code := cliFor(t, time.Minute, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("wanlab %q: exit %d, %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
}

// TestExperimentFlentAndPcapPerRun: flent: true and pcap: true in a test
// entry write each run's Flent file and capture into the results
// directory beside its results file, named after it, each its own (issue
// 26 item 8: no Flent file was written, and every run overwrote one
// capture); a path instead of true is refused at its line.
func TestExperimentFlentAndPcapPerRun(t *testing.T) {
	wanlabBin(t) // waits for the machine's root tests before the time limit starts
	file, dir := experimentFile(t, `name: per-run
vars:
  delay: [5ms, 15ms]
path:
  both: "netem delay ${delay}; tbf rate 5mbit burst 32k latency 50ms"
tests:
  - test: tcp_upload
    duration: 1s
    lead: 200ms
    tail: 200ms
    flent: true
    pcap: true
`)
	if _, errOut, code := cliFor(t, time.Minute, "experiment", "run", file, "-o", dir); code != 0 {
		t.Fatalf("experiment run: exit %d\n%s", code, errOut)
	}
	ix, err := experiment.ReadIndex(dir)
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for _, c := range ix.Cases {
		base := filepath.Join(dir, strings.TrimSuffix(c.Runs[0].File, ".json.gz"))
		doc, err := results.ReadFile(base + ".json.gz")
		if err != nil {
			t.Fatal(err)
		}
		if argv := strings.Join(doc.Run.Argv, " "); !strings.Contains(argv, "--pcap "+base+".pcap") || !strings.Contains(argv, "--flent "+base+".flent.gz") {
			t.Errorf("%s records %q", base, argv)
		}
		pcap, err := os.ReadFile(base + ".pcap")
		if err != nil || len(pcap) < 1000 || !bytes.HasPrefix(pcap, []byte{0x4d, 0x3c, 0xb2, 0xa1}) && !bytes.HasPrefix(pcap, []byte{0xd4, 0xc3, 0xb2, 0xa1}) {
			t.Errorf("%s.pcap: %d bytes (%v)", base, len(pcap), err)
		}
		sizes = append(sizes, len(pcap))
		var flent struct {
			Metadata struct{ Name string } `json:"metadata"`
			Results  map[string][]*float64 `json:"results"`
		}
		if err := readGzipJSON(base+".flent.gz", &flent); err != nil || flent.Metadata.Name != "tcp_upload" || len(flent.Results["TCP upload"]) == 0 {
			t.Errorf("%s.flent.gz: %v, test %q, %d TCP upload samples", base, err, flent.Metadata.Name, len(flent.Results["TCP upload"]))
		}
	}
	if len(sizes) != 2 || sizes[0] == sizes[1] {
		t.Errorf("captures of %v bytes: want one per run", sizes)
	}

	os.WriteFile(file, []byte("tests:\n  - test: tcp_upload\n    pcap: run.pcap\n"), 0o644)
	_, errOut, code := cliFor(t, time.Minute, "experiment", "run", file, "-o", filepath.Join(filepath.Dir(file), "none"))
	if want := file + `:3: pcap: "run.pcap": in an experiment, each run writes its own file into the results directory, named after its results file (c001-tcp_upload-r1.pcap): give pcap: true`; code != 2 || !strings.Contains(errOut, want) {
		t.Errorf("pcap: run.pcap: exit %d, %q; want 2 and %q", code, errOut, want)
	}
}

func readGzipJSON(path string, v any) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	return json.NewDecoder(z).Decode(v)
}

// TestExperimentStopsOnMissingClient: a custom test whose client program
// is missing ends every run early the same way (only the times in the
// reason differ); the experiment stops after three such runs, exit 1,
// instead of going through every case (issue 26 item 11).
func TestExperimentStopsOnMissingClient(t *testing.T) {
	wanlabBin(t) // waits for the machine's root tests before the time limit starts
	file, dir := experimentFile(t, `name: missing-client
vars:
  delay: [5ms, 10ms, 15ms, 20ms]
path:
  both: "netem delay ${delay}"
tests:
  - test: custom
    client: "wl-nosuchtool -c @peer"
    duration: 2s
    lead: 200ms
    tail: 200ms
`)
	_, errOut, code := cliFor(t, time.Minute, "experiment", "run", file, "-o", dir)
	if code != 1 || !strings.Contains(errOut, "stopped: the last 3 runs failed the same way (") || !strings.Contains(errOut, "wl-nosuchtool: not found") {
		t.Fatalf("exit %d, stderr:\n%s\nwant exit 1 and a stop after 3 runs", code, errOut)
	}
	ix, err := experiment.ReadIndex(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n := ix.Counts(); n[experiment.StatusPartial] != 3 || n[experiment.StatusPending] != 1 {
		t.Errorf("index: %v; want 3 partial, 1 not run", n)
	}
}

// experimentFile writes text as an experiment file in a directory of the
// test's own, and returns the file and a directory there for its output.
func experimentFile(t *testing.T, text string) (file, dir string) {
	t.Helper()
	work := t.TempDir()
	file = filepath.Join(work, "e.yaml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return file, filepath.Join(work, "out")
}
