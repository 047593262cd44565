package testrun

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"wanlab/catalog"
	"wanlab/internal/outfile"
	"wanlab/internal/tracefile"
	"wanlab/lab"
	"wanlab/link"
	"wanlab/profile"
	"wanlab/qdisc"
	"wanlab/results"
	"wanlab/rootless"
	"wanlab/tcspec"
	"wanlab/traffic/tfrcflow"
)

// BadOption is an error in the options: the run cannot start as given.
// Its message names the problem and the fix; `wanlab run` exits 2 on it.
type BadOption struct {
	// Key is the option at fault, by its experiment key (Option.Key), or
	// "" when no one option is: an experiment reports the error at that
	// key's line.
	Key string
	msg string
}

func (e *BadOption) Error() string { return e.msg }

// bad is a *BadOption of the option key.
func bad(key, format string, args ...any) error {
	return &BadOption{Key: key, msg: fmt.Sprintf(format, args...)}
}

// badf is a *BadOption of no one option.
func badf(format string, args ...any) error { return bad("", format, args...) }

// IsBadOption reports whether err is (or wraps) a *BadOption.
func IsBadOption(err error) bool {
	var b *BadOption
	return errors.As(err, &b)
}

// Mode is where a run's traffic crosses: the router mode its results
// record, one concept with one set of values.
type Mode = results.RouterMode

const (
	// ModeTestbed: a testbed the run builds and removes.
	ModeTestbed = results.RouterTestbed
	// ModeLab: a testbed another process runs (Options.Lab).
	ModeLab = results.RouterLab
	// ModeDirect: a veth pair between the hosts, no router.
	ModeDirect = results.RouterDirect
)

// Limits on the options, so that a typo cannot ask for a run of years or
// a grid of billions of points.
const (
	maxLength = 24 * time.Hour
	minStep   = 10 * time.Millisecond
	maxPoints = 1_000_000 // grid points of the whole run
)

// Setup is a checked run: the options resolved against their defaults, the
// test, the parsed chains and changes. Prepare makes it; Run runs it.
type Setup struct {
	// Opts are the options as given.
	Opts Options
	// Test is the catalog's test.
	Test catalog.Test
	// Mode says where the traffic crosses.
	Mode Mode
	// Duration, Step, Lead and Tail are resolved.
	Duration, Step, Lead, Tail time.Duration
	// Delay is Flent's DELAY, whose multiples a test's schedule counts
	// its flows' times in (catalog.Time): the lead for a test whose flows
	// run over the load, --delay for one with a schedule of its own
	// (whose lead is 0 and whose tail is the rest of its schedule).
	Delay time.Duration
	// Up and Down are the chains a testbed of the run's own starts with
	// (nil for ModeLab and ModeDirect), UpText and DownText the same in tc
	// syntax.
	Up, Down         []qdisc.Spec
	UpText, DownText string
	// TraceUp and TraceDown limit a direction's capacity (nil: none).
	TraceUp, TraceDown *link.Trace
	// Changes are the timed chain changes, in time order.
	Changes []TimedChange
	// CCUp and CCDown are the congestion controls of the flows whose data
	// goes up and down ("" keeps the host's default).
	CCUp, CCDown string
	// TOS is the TOS byte of best-effort flows, or -1 to keep theirs.
	TOS int
	// UDPRate is udp_flood's rate in bit/s of UDP payload.
	UDPRate int64
	// TxQLen is the TFRC flows' transmit buffer in packets (0:
	// unbounded).
	TxQLen int
	// ServerWait bounds the custom test's wait for its server to listen
	// (0: no wait).
	ServerWait time.Duration
	// Sysctls are set in the hosts before the run, in order.
	Sysctls []Sysctl
	// Lab is the testbed's name: the one given (ModeLab) or the one the
	// run makes up for its own testbed or veth pair.
	Lab string
	// Framing is what a testbed of the run's own counts in a packet's
	// length.
	Framing qdisc.Framing
	// Granularity is what a testbed of the run's own takes as one packet
	// of a GSO super-packet.
	Granularity qdisc.Granularity
	// DataPlane is how a testbed of the run's own joins its hosts to the
	// router.
	DataPlane lab.DataPlane
	// Hosts are a testbed of the run's own's hosts: Clients, Servers,
	// Access and HostCC of lab.Options (the test's need where the
	// options give no count).
	Hosts lab.Options
}

// TimedChange is a checked Change.
type TimedChange struct {
	At time.Duration
	// Dirs are the directions changed ("up", "down"), each with its chain
	// parsed and in tc syntax.
	Dirs   []string
	Chains [][]qdisc.Spec
	Texts  []string
}

// Sysctl is one sysctl of one host.
type Sysctl struct {
	Host       lab.Role
	Key, Value string
}

// Length is the whole run: lead, load and tail.
func (s *Setup) Length() time.Duration { return s.Lead + s.Duration + s.Tail }

// CheckGiven refuses what Prepare cannot see in Options: an option given
// with the value that, in Options, stands for "not given" (a user who
// types --streams 0 asked for something, and must not silently get the
// default: Option.ZeroFix), and an option given where it does nothing
// although its value is the default (--seed 1 with --lab). given reports
// whether an option was given, by its flag's name ("streams"); a run's
// options pass through CheckGiven and then Prepare (PrepareGiven), from
// the command line and from an experiment file alike.
func CheckGiven(o Options, given func(flag string) bool) error {
	for _, op := range registry {
		if op.ZeroFix == "" || op.Flag == "" || !given(op.Flag) || !op.zero(&o) {
			continue
		}
		if t := op.Type(); t == "string" || t == "strings" || t == "seconds" {
			return bad(op.Key, "%s is empty: %s", op.Name(), op.ZeroFix)
		}
		return bad(op.Key, "%s 0: %s", op.Name(), op.ZeroFix)
	}
	test, err := lookupTest(o)
	if err != nil {
		return nil // Prepare says why
	}
	return notApplying(test, &o, func(op *Option) bool { return op.Flag != "" && given(op.Flag) && !op.zero(&o) })
}

// PrepareGiven is CheckGiven, then Prepare: the whole check of a run's
// options, which `wanlab run` and every run of an experiment make.
func PrepareGiven(o Options, given func(flag string) bool, tc tcspec.Options) (*Setup, error) {
	if err := CheckGiven(o, given); err != nil {
		return nil, err
	}
	return Prepare(o, tc)
}

// lookupTest returns the test of o: the main job's when it names none.
func lookupTest(o Options) (catalog.Test, error) {
	name := o.Test
	if name == "" {
		name = DefaultTest
	}
	ps := catalog.PerStream{Markings: o.Markings, CCAlgos: o.CCAlgos, Delays: o.StreamDelays, Labels: o.Labels, PingLabels: o.PingLabels}
	return catalog.Lookup(name, catalog.Options{Streams: o.Streams, UploadStreams: o.UploadStreams, DownloadStreams: o.DownloadStreams, Servers: o.Servers, PerStream: ps})
}

// Prepare checks o and resolves its defaults without creating anything:
// every error is a *BadOption naming the fix. tc says how chains are read
// (netem distribution files). Prepare reads the registry of running
// testbeds for Options.Lab, the kernel's congestion controls and sysctls
// for --cc and --sysctl, and trace files.
func Prepare(o Options, tc tcspec.Options) (*Setup, error) {
	s := &Setup{Opts: o, TOS: -1, Mode: ModeTestbed}
	mainJob := o.Test == ""
	test, err := lookupTest(o)
	if err != nil {
		for _, k := range []string{"streams", "upload_streams", "download_streams"} {
			if strings.HasPrefix(err.Error(), LookupOption(k).Name()+" ") {
				return nil, bad(k, "%v", err)
			}
		}
		// The catalog names a per-stream parameter as Flent does
		// ("markings: ..."); the message names the flag.
		for _, k := range streamKeys {
			if rest, ok := strings.CutPrefix(err.Error(), k+": "); ok {
				return nil, bad(k, "%s: %s", LookupOption(k).Name(), rest)
			}
		}
		return nil, bad("test", "%v (wanlab run without a test runs %s)", err, DefaultTest)
	}
	s.Test = test
	// An option that does nothing in this run is refused, not recorded
	// as if it had applied.
	if err := notApplying(test, &o, func(op *Option) bool { return op.inUse(&o) }); err != nil {
		return nil, err
	}
	if err := s.resolveTimes(o, mainJob); err != nil {
		return nil, err
	}
	if err := s.checkStreamDelays(o); err != nil {
		return nil, err
	}
	if err := s.resolveMode(o); err != nil {
		return nil, err
	}
	if err := s.resolvePath(o, tc); err != nil {
		return nil, err
	}
	if err := s.resolveHosts(o, tc); err != nil {
		return nil, err
	}
	if err := s.resolveChanges(o, tc); err != nil {
		return nil, err
	}
	if err := s.resolveTraffic(o); err != nil {
		return nil, err
	}
	if err := s.resolveTransports(o); err != nil {
		return nil, err
	}
	if err := s.resolveSysctls(o); err != nil {
		return nil, err
	}
	if err := s.checkOutputs(o); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Setup) resolveTimes(o Options, mainJob bool) error {
	s.Duration = DefaultDuration
	if mainJob {
		s.Duration = MainJobDuration
	}
	if o.Duration != nil {
		s.Duration = *o.Duration
	}
	s.Step = o.Step
	s.Lead, s.Tail = DefaultLeadTail, DefaultLeadTail
	if s.Test.NoLoad {
		s.Lead, s.Tail = 0, 0
	}
	if o.Lead != nil {
		s.Lead = *o.Lead
	}
	if o.Tail != nil {
		s.Tail = *o.Tail
	}
	s.Delay = s.Lead
	if s.Test.Scheduled() {
		// Flent's schedule: the run starts with the first flow and lasts
		// the test's TOTAL_LENGTH; the load is LENGTH from 0.
		s.Delay = DefaultDelay
		if o.Delay != nil {
			s.Delay = *o.Delay
		}
		if s.Delay <= 0 {
			return bad("delay", "--delay %v: give a positive DELAY, e.g. --delay 5s (Flent's default)", s.Delay)
		}
		s.Lead = 0
		s.Tail = s.Test.Length(s.Delay, s.Duration) - s.Duration
	}
	// offGrid is the first of lead, load and tail that is not a whole
	// number of steps, by its key.
	offGrid := ""
	for _, p := range []struct {
		key string
		d   time.Duration
	}{{"lead", s.Lead}, {"duration", s.Duration}, {"tail", s.Tail}, {"delay", s.Delay}} {
		if s.Step > 0 && p.d%s.Step != 0 && offGrid == "" {
			offGrid = p.key
		}
	}
	switch {
	case s.Duration <= 0:
		return bad("duration", "--duration %v: give a positive length, e.g. --duration 30s", s.Duration)
	case s.Step < minStep:
		return bad("step", "--step %v: give at least %v (Flent's default is 200ms)", s.Step, minStep)
	case s.Step > s.Duration:
		return bad("step", "--step %v is longer than the load (--duration %v): shorten the step or lengthen the run", s.Step, s.Duration)
	case s.Lead < 0:
		return bad("lead", "--lead %v, --tail %v: give 0 or more (Flent's are 5s each)", s.Lead, s.Tail)
	case s.Tail < 0:
		return bad("tail", "--lead %v, --tail %v: give 0 or more (Flent's are 5s each)", s.Lead, s.Tail)
	case offGrid != "":
		// The load must start and end on the grid: a throughput sample is
		// the bytes of one whole step.
		if s.Test.Scheduled() {
			return bad(offGrid, "--duration %v and --delay %v must each be a whole number of steps (--step %v), so that every flow starts and stops on the grid: round them, or choose a step that divides them",
				s.Duration, s.Delay, s.Step)
		}
		return bad(offGrid, "--lead %v, --duration %v and --tail %v must each be a whole number of steps (--step %v): round them, or choose a step that divides them",
			s.Lead, s.Duration, s.Tail, s.Step)
	case s.Length() > maxLength:
		return bad("duration", "the run would last %v (lead, load and tail): keep it within %v", s.Length(), maxLength)
	case s.Length()/s.Step > maxPoints:
		return bad("step", "--step %v over %v makes more than %d grid points: lengthen the step", s.Step, s.Length(), maxPoints)
	}
	return nil
}

func (s *Setup) resolveMode(o Options) error {
	// Where the options of the path apply is the registry's (NotFor),
	// checked before.
	if o.Framing != "" {
		f, err := qdisc.ParseFraming(o.Framing)
		if err != nil {
			return bad("framing", "--framing: %v", err)
		}
		s.Framing = f
	}
	if o.Granularity != "" {
		g, err := qdisc.ParseGranularity(o.Granularity)
		if err != nil {
			return bad("granularity", "--granularity: %v", err)
		}
		s.Granularity = g
	}
	if o.DataPlane != "" {
		p, err := lab.ParseDataPlane(o.DataPlane)
		if err != nil {
			return bad("dataplane", "--dataplane: %v", err)
		}
		if p == lab.PacketPlane {
			if err := rootless.CheckPacketPlane(); err != nil {
				return bad("dataplane", "--dataplane %s: %v", p, err)
			}
		}
		s.DataPlane = p
	}
	switch {
	case o.Direct:
		s.Mode = ModeDirect
		s.Lab = ownName()
	case o.Lab != "":
		s.Mode = ModeLab
		name, err := lab.Resolve(o.Lab)
		if err != nil {
			return bad("lab", "--lab: %v", err)
		}
		s.Lab = name
	default:
		s.Lab = ownName()
	}
	return nil
}

// ownName names the testbed or veth pair a run makes: unique to the
// process, so that two runs at once do not meet.
func ownName() string { return fmt.Sprintf("run-%d", os.Getpid()) }

func (s *Setup) resolvePath(o Options, tc tcspec.Options) error {
	if s.Mode != ModeTestbed {
		return nil
	}
	scripts, err := ReadScripts(&o, tc)
	if err != nil {
		return err
	}
	explicit := o.Up != "" || o.Down != "" || o.Both != "" || scripts.Any()
	if explicit && o.Profile != "" {
		return bad("profile", "--profile %s gives both chains: drop it, or drop --up, --down, --both and the scripts", o.Profile)
	}
	if o.Both != "" && (o.Up != "" || o.Down != "") {
		return bad("both", "--both sets both directions: give either --both, or --up and/or --down")
	}
	if explicit {
		upKey, upText, downKey, downText := "up", o.Up, "down", o.Down
		if o.Both != "" {
			upKey, upText, downKey, downText = "both", o.Both, "both", o.Both
		}
		if s.Up, err = parseChain(upKey, "--up", upText, tc); err != nil {
			return err
		}
		if s.Down, err = parseChain(downKey, "--down", downText, tc); err != nil {
			return err
		}
		up, down, err := scripts.Chains(&qdisc.Env{Framing: s.Framing})
		if err != nil {
			return err
		}
		if scripts.Up != nil {
			s.Up = up
		}
		if scripts.Down != nil {
			s.Down = down
		}
	} else {
		name := o.Profile
		if name == "" {
			name = DefaultProfile
		}
		p, err := profile.Lookup(name)
		if err != nil {
			return bad("profile", "--profile: %v", err)
		}
		if s.Up, s.Down, err = p.Chains(tc); err != nil {
			return fmt.Errorf("testrun: %w", err) // a broken built-in profile is wanlab's bug
		}
	}
	if o.AQM != "" {
		if tcspec.HasTree(s.Up) || tcspec.HasTree(s.Down) {
			return bad("aqm", "--aqm replaces the bottleneck queue of a chain, and the path is a tree of classes: put %s on the classes in the script or the tc lines, and drop --aqm", o.AQM)
		}
		if s.Up, err = profile.WithAQM(s.Up, o.AQM); err != nil {
			return bad("aqm", "up: %v", err)
		}
		if s.Down, err = profile.WithAQM(s.Down, o.AQM); err != nil {
			return bad("aqm", "down: %v", err)
		}
	}
	s.UpText, s.DownText = tcspec.FormatChain(s.Up), tcspec.FormatChain(s.Down)
	if s.TraceUp, err = readTrace("trace_up", o.TraceUp); err != nil {
		return err
	}
	if s.TraceDown, err = readTrace("trace_down", o.TraceDown); err != nil {
		return err
	}
	return nil
}

// resolveHosts sets the hosts of a testbed of the run's own: as many as
// the options give, or as the test needs where they give none; fewer
// than the test needs are refused.
func (s *Setup) resolveHosts(o Options, tc tcspec.Options) error {
	if s.Mode != ModeTestbed {
		return nil // the registry refused the host options (NotFor)
	}
	spec := lab.HostSpecs{Clients: o.Clients, Servers: o.Servers, AccessUp: o.AccessUp, AccessDown: o.AccessDown, HostCC: o.HostCC}
	for _, n := range []struct {
		key, what string
		given     *int
		need      int
	}{{"clients", "client", &spec.Clients, s.Test.Clients}, {"servers", "server", &spec.Servers, s.Test.Servers}} {
		switch {
		case *n.given == 0:
			*n.given = max(n.need, 1)
		case *n.given < 0:
			// spec.Parse refuses it naming the range; the test's need
			// (possibly 0) would make no sense of it.
		case *n.given < n.need:
			first := n.what[:1]
			return bad(n.key, "--%s %d: %s runs flows to %d %ss (%s1..%s%d): give --%s %d or more, or leave --%s out", n.key, *n.given, s.Test.Name, n.need, n.what, first, first, n.need, n.key, n.need, n.key)
		}
	}
	err := spec.Parse(&s.Hosts, hostLabels, tc, &qdisc.Env{Framing: s.Framing})
	var he *lab.HostSpecError
	if errors.As(err, &he) {
		return bad(hostKeys[he.Label], "%v", err)
	}
	if err != nil {
		return err
	}
	if h := s.Hosts; s.DataPlane != lab.TUNPlane && (h.Clients > 1 || h.Servers > 1 || len(h.Access) > 0) {
		return bad("dataplane", "--dataplane %s: a testbed of more than two hosts, or with access links, runs on the tun data plane: drop --dataplane, or run two hosts without access links", s.DataPlane)
	}
	return nil
}

// hostLabels name the host options in errors by their flags, and
// hostKeys gives each flag's key.
var (
	hostLabels = lab.HostLabels{Clients: "--clients", Servers: "--servers", AccessUp: "--access-up", AccessDown: "--access-down", HostCC: "--host-cc"}
	hostKeys   = map[string]string{"--clients": "clients", "--servers": "servers", "--access-up": "access_up", "--access-down": "access_down", "--host-cc": "host_cc"}
)

// parseChain parses the chain of the option key, which messages call what.
func parseChain(key, what, text string, tc tcspec.Options) ([]qdisc.Spec, error) {
	specs, err := tcspec.ParseChain(text, tc)
	if err != nil {
		return nil, bad(key, "%s: %v", what, err)
	}
	return specs, nil
}

// readTrace reads the trace file of the option key.
func readTrace(key, path string) (*link.Trace, error) {
	if path == "" {
		return nil, nil
	}
	t, err := tracefile.Load(path)
	if err != nil {
		return nil, bad(key, "%s: %v", LookupOption(key).Name(), err)
	}
	return t, nil
}

func (s *Setup) resolveChanges(o Options, tc tcspec.Options) error {
	for i, c := range o.At {
		what := c.String()
		if c.At <= 0 || c.At >= s.Length() {
			return bad("at", "%s: the time must lie inside the run, after 0 and before its end at %v (lead %v, load %v, tail %v)",
				what, s.Length(), s.Lead, s.Duration, s.Tail)
		}
		if c.Up == "" && c.Down == "" && c.Both == "" {
			return bad("at", "--at %v changes nothing: follow it with the chains to set, e.g. --at %v --up \"tbf rate 1mbit burst 32k latency 50ms\"", c.At, c.At)
		}
		if c.Both != "" && (c.Up != "" || c.Down != "") {
			return bad("at", "%s: --both sets both directions: give either --both, or --up and/or --down", what)
		}
		tch := TimedChange{At: c.At}
		for _, d := range [][2]string{{"up", c.Up}, {"down", c.Down}, {"up", c.Both}, {"down", c.Both}} {
			if d[1] == "" {
				continue
			}
			chain, err := parseChain("at", fmt.Sprintf("--at %v --%s", c.At, d[0]), d[1], tc)
			if err != nil {
				return err
			}
			tch.Dirs = append(tch.Dirs, d[0])
			tch.Chains = append(tch.Chains, chain)
			tch.Texts = append(tch.Texts, tcspec.FormatChain(chain))
		}
		if i > 0 && c.At < o.At[i-1].At {
			return bad("at", "%s comes before the change listed ahead of it (--at %v): list the changes in time order", what, o.At[i-1].At)
		}
		s.Changes = append(s.Changes, tch)
	}
	return nil
}

func (s *Setup) resolveTraffic(o Options) error {
	var err error
	if s.CCUp, s.CCDown, err = parseCC(o.CC); err != nil {
		return err
	}
	if err := s.checkCCDirections(o.CC); err != nil {
		return err
	}
	if err := s.checkCCAlgos(o.CCAlgos); err != nil {
		return err
	}
	if err := s.checkFlowCCs(); err != nil {
		return err
	}
	if o.TOS != "" {
		if s.TOS, err = ParseTOS(o.TOS); err != nil {
			return bad("tos", "--tos: %v", err)
		}
	}
	for _, b := range []struct {
		key  string
		size int
	}{{"sndbuf", o.SendBuffer}, {"rcvbuf", o.ReceiveBuffer}} {
		if b.size < 0 || b.size > 1<<30 {
			return bad(b.key, "--%s %d: give a size from 0 (the kernel's autotuning) to 1 GiB", b.key, b.size)
		}
	}
	rate := o.UDPRate
	if rate == "" {
		rate = DefaultUDPRate
	}
	if s.UDPRate, err = ParseRate(rate); err != nil {
		return bad("udp_rate", "--udp-rate: %v", err)
	}
	if o.UDPSize != 0 && (o.UDPSize < 24 || o.UDPSize > 65507) {
		return bad("udp_size", "--udp-size %d: give a UDP payload from 24 to 65507 bytes (iperf's default is 1470)", o.UDPSize)
	}
	return nil
}

// resolveTransports checks the options of wanlab's own tests: --tx-qlen
// for TFRC, --server, --client and --server-wait for custom.
func (s *Setup) resolveTransports(o Options) error {
	s.TxQLen = DefaultTxQLen
	if o.TxQLen != nil {
		s.TxQLen = *o.TxQLen
		if s.TxQLen < 0 || s.TxQLen > tfrcflow.MaxTxQueueLen {
			return bad("tx_qlen", "--tx-qlen %d: give 0 (unbounded, as net.dccp.default.tx_qlen=0: the 208 KiB send buffer bounds it) to %d packets (DCCP's default is %d)",
				s.TxQLen, tfrcflow.MaxTxQueueLen, DefaultTxQLen)
		}
	}
	if !s.Test.Custom {
		return nil
	}
	if strings.TrimSpace(o.Client) == "" {
		return bad("client", "custom runs your own sender: give it with --client, e.g. --client 'iperf3 -c @peer -p @port -t @duration' (and its receiver with --server 'iperf3 -s -p @port -1')")
	}
	for _, c := range []struct{ key, cmd string }{{"server", o.Server}, {"client", o.Client}} {
		if strings.ContainsRune(c.cmd, 0) {
			return bad(c.key, "--%s: the command holds a NUL byte, which no program can take: remove it", c.key)
		}
	}
	s.ServerWait = DefaultServerWait
	if o.ServerWait != nil {
		if o.Server == "" {
			return bad("server_wait", "--server-wait is how long to wait for --server to listen, and there is no --server: drop it")
		}
		s.ServerWait = *o.ServerWait
		if s.ServerWait < 0 || s.ServerWait > 10*time.Minute {
			return bad("server_wait", "--server-wait %v: give 0 (start the client without waiting) to 10m", s.ServerWait)
		}
	}
	return nil
}

// parseCC reads --cc: one algorithm, or up=ALG,down=ALG.
func parseCC(v string) (up, down string, err error) {
	if v == "" {
		return "", "", nil
	}
	if !strings.Contains(v, "=") {
		if err := checkCC("cc", v); err != nil {
			return "", "", err
		}
		return v, v, nil
	}
	for _, part := range strings.Split(v, ",") {
		dir, alg, ok := strings.Cut(part, "=")
		if !ok || (dir != "up" && dir != "down") {
			return "", "", bad("cc", "--cc %q: give one algorithm (--cc cubic) or one per direction (--cc up=cubic,down=bbr)", v)
		}
		if err := checkCC("cc", alg); err != nil {
			return "", "", err
		}
		dst := &up
		if dir == "down" {
			dst = &down
		}
		if *dst != "" {
			return "", "", bad("cc", "--cc %q gives %s twice: give each direction once (--cc up=cubic,down=bbr)", v, dir)
		}
		*dst = alg
	}
	return up, down, nil
}

// checkCCDirections refuses a direction that --cc names and no TCP flow of
// the test takes: the results would otherwise record a congestion control
// that nothing used. (A test without any TCP flow of wanlab's is refused
// before, as the registry says: ccNotFor.)
func (s *Setup) checkCCDirections(v string) error {
	tcp := map[catalog.Direction]bool{}
	for _, f := range s.Test.Flows {
		if f.Transport == catalog.TCP {
			tcp[f.Dir] = true
		}
	}
	if !strings.Contains(v, "=") {
		return nil
	}
	for _, part := range strings.Split(v, ",") {
		dir, _, _ := strings.Cut(part, "=")
		d := catalog.Up
		if dir == "down" {
			d = catalog.Down
		}
		if !tcp[d] {
			return bad("cc", "--cc %s: %s has no TCP flow whose data goes %s: drop %s", v, s.Test.Name, dir, part)
		}
	}
	return nil
}

// checkCC checks a congestion control of the option key (--cc,
// --cc-algos) against the kernel's loaded algorithms (lab.CheckLoadedCC).
// Every flow sets its own (TCP_CONGESTION), so the namespace-default
// restriction lab.CheckCC explains does not apply.
func checkCC(key, alg string) error {
	if err := lab.CheckLoadedCC(alg); err != nil {
		return bad(key, "%s %s: %v, or choose another", LookupOption(key).Name(), alg, err)
	}
	return nil
}

// checkFlowCCs refuses, before anything is made, a test whose TCP flows
// set a congestion control the kernel has not loaded (Flent's
// cubic_westwood's westwood), unless --cc replaces it: the flow would
// otherwise fail when it starts, after the testbed was built.
func (s *Setup) checkFlowCCs() error {
	for _, f := range s.Test.Flows {
		if f.Transport != catalog.TCP || f.CC == "" {
			continue
		}
		if f.Dir == catalog.Up && s.CCUp != "" || f.Dir == catalog.Down && s.CCDown != "" {
			continue
		}
		if err := lab.CheckLoadedCC(f.CC); err != nil {
			return bad("test", "%s: its flow %q runs %s, as Flent's test sets it, and %v (or run every flow with one the kernel has: --cc cubic)",
				s.Test.Name, f.Series, f.CC, err)
		}
	}
	return nil
}

// ParseTOS reads a TOS byte: a DSCP name (catalog.DSCPNames) or a number
// from 0 to 255 (decimal, or hex with 0x).
func ParseTOS(v string) (int, error) {
	if d, ok := catalog.DSCP(v); ok {
		return int(d) << 2, nil
	}
	n, err := strconv.ParseUint(v, 0, 8)
	if err != nil {
		return 0, fmt.Errorf("%q is neither a DSCP name (%s) nor a TOS byte from 0 to 255 (EF is 0xb8)", v, catalog.DSCPNames)
	}
	return int(n), nil
}

// ParseRate reads a rate in bit/s as tcspec.ParseRate does (tc's units,
// in which 10mbps is 80 Mbit/s, or iperf's k, m, g, t: 20M is 20 Mbit/s),
// from 1 kbit/s to 1000 Gbit/s.
func ParseRate(v string) (int64, error) {
	r, err := tcspec.ParseRate(v)
	if err != nil {
		return 0, err
	}
	if r < 1000 || r > 1e12 {
		return 0, fmt.Errorf("%q: give a rate from 1kbit to 1000gbit, e.g. 20mbit or 20M", v)
	}
	return int64(r), nil
}

func (s *Setup) resolveSysctls(o Options) error {
	// Every host of a testbed of the run's own; the client and the
	// server of another (a borrowed testbed's other hosts keep theirs).
	all := []lab.Role{lab.Client, lab.Server}
	if s.Mode == ModeTestbed {
		all = s.Hosts.Roles()
	}
	both := func(key, val string) {
		for _, r := range all {
			s.Sysctls = append(s.Sysctls, Sysctl{r, key, val})
		}
	}
	if o.ECN {
		both("net.ipv4.tcp_ecn", "1")
	}
	for _, kv := range [][3]string{{"tcp_rmem", "net.ipv4.tcp_rmem", o.TCPRmem}, {"tcp_wmem", "net.ipv4.tcp_wmem", o.TCPWmem}} {
		if kv[2] == "" {
			continue
		}
		f := strings.Fields(kv[2])
		ok := len(f) == 3
		for _, x := range f {
			if n, err := strconv.ParseUint(x, 10, 31); err != nil || n == 0 {
				ok = false
			}
		}
		if !ok {
			return bad(kv[0], "%s %q: give three byte counts, min default max, e.g. \"4096 131072 33554432\"", LookupOption(kv[0]).Name(), kv[2])
		}
		both(kv[1], strings.Join(f, " "))
	}
	for _, arg := range o.Sysctls {
		hosts := all
		rest := arg
		if h, r, ok := strings.Cut(arg, ":"); ok && !strings.Contains(h, "=") {
			role, err := lab.ParseRole(h)
			if err == nil && s.Mode == ModeTestbed && !slices.Contains(all, role) {
				err = fmt.Errorf("the testbed has no host %s (--clients %d --servers %d)", role, s.Hosts.Clients, s.Hosts.Servers)
			}
			if err != nil {
				return bad("sysctls", "--sysctl %q: %v (or leave the prefix out for every host)", arg, err)
			}
			hosts, rest = []lab.Role{role}, r
		}
		key, val, ok := strings.Cut(rest, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			return bad("sysctls", "--sysctl %q: give [HOST:]KEY=VALUE, e.g. --sysctl net.ipv4.tcp_recovery=0", arg)
		}
		if !strings.HasPrefix(key, "net.") || strings.Contains(key, "..") || strings.Contains(key, "/") {
			return bad("sysctls", "--sysctl %q: only keys under net. are per host (others would change the whole machine)", arg)
		}
		// Without root, only a namespace's own keys can be set; in the
		// user's namespace that is measured before the key is looked for,
		// as it does not show the machine's keys.
		if err := rootless.CheckSysctl(key, val); err != nil {
			return bad("sysctls", "--sysctl %q: %v", arg, err)
		}
		// The root namespace has every key a new namespace has (and some
		// more): a key missing here is a typo.
		if _, err := os.Stat(filepath.Join("/proc/sys", strings.ReplaceAll(key, ".", "/"))); err != nil {
			return bad("sysctls", "--sysctl %q: the kernel has no sysctl %s: check its name with `sysctl -a | grep %s`", arg, key, key[strings.LastIndexByte(key, '.')+1:])
		}
		for _, h := range hosts {
			s.Sysctls = append(s.Sysctls, Sysctl{h, key, val})
		}
	}
	return nil
}

func (s *Setup) checkOutputs(o Options) error {
	for _, out := range []struct{ key, path, suggest string }{
		{"output", o.Output, "results.json.gz"},
		{"flent", o.Flent, "results.flent.gz"},
		{"pcap", o.Pcap, "wan.pcap"},
	} {
		if out.path == "" {
			continue
		}
		if err := outfile.Check(out.path, outfile.Options{Label: "--" + out.key, Suggest: out.suggest}); err != nil {
			return bad(out.key, "%v", err)
		}
	}
	if o.Output == "" {
		// The default name is chosen when the run starts; its directory
		// must take a new file now.
		def := DefaultOutput(s.Test.Name, time.Now())
		if err := outfile.Check(def, outfile.Options{Label: "the results file", NoClobber: true, ClobberHint: "name one with -o FILE"}); err != nil {
			return bad("output", "%v", err)
		}
	}
	if o.JSON && (o.Output == "-" || o.Flent == "-" || o.Pcap == "-") {
		return bad("json", "--json prints the results on stdout: give the other outputs a file name, not -")
	}
	if n := countStdout(o.Output, o.Flent, o.Pcap); n > 1 {
		return badf("only one output can go to stdout (-): give the others file names")
	}
	if a, b, same := sameFile(map[string]string{"--output": o.Output, "--flent": o.Flent, "--pcap": o.Pcap}); same {
		return bad(b[2:], "%s and %s name the same file: give each output its own", a, b)
	}
	return nil
}

// sameFile reports two of the outputs (by flag) that name the same file,
// a device that discards (/dev/null) aside.
func sameFile(outs map[string]string) (a, b string, same bool) {
	flags := make([]string, 0, len(outs))
	for f := range outs {
		flags = append(flags, f)
	}
	slices.Sort(flags)
	abs := map[string]string{}
	for _, f := range flags {
		p := outs[f]
		if p == "" || p == "-" {
			continue
		}
		if st, err := os.Stat(p); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			continue
		}
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		p, _ = filepath.Abs(p)
		if g, ok := abs[p]; ok {
			return g, f, true
		}
		abs[p] = f
	}
	return "", "", false
}

func countStdout(paths ...string) int {
	n := 0
	for _, p := range paths {
		if p == "-" {
			n++
		}
	}
	return n
}

// DefaultOutput is the results file of a run of test started at t that
// names none: wanlab-TEST-YYYYmmdd-HHMMSS.json.gz in the current directory.
func DefaultOutput(test string, t time.Time) string {
	return fmt.Sprintf("wanlab-%s-%s.json.gz", test, t.Format("20060102-150405"))
}
