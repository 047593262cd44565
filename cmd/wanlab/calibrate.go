package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/cobra"

	calib "wanlab/calibrate"
	"wanlab/lab"
	"wanlab/testrun"
)

func newCalibrateCommand(s *streams) *cobra.Command {
	var (
		cfg        calib.Config
		tests      string
		udpRate    string
		asJSON     bool
		scriptFile string
		vars       testrun.Options // --set, the registry's
	)
	c := &cobra.Command{
		Use:   "calibrate [--chain CHAIN | --script FILE [--set NAME=VALUE]] [--tests tcp,udp] [--duration 10s] [--runs N] [--json]",
		Short: "Measure wanlab against the kernel's own qdiscs on the same test",
		Long: `calibrate runs the same tests through a chain of the kernel's qdiscs and
through wanlab's emulation of it, and prints both side by side with their
ratio, so that every figure wanlab gives comes with its measured error on
this machine.

The kernel side is a forwarding hop: client, router and server namespaces
joined by veth pairs, the chain on the router's egress veth towards the
server (root first, each next qdisc the child of the one before), with TSO,
GSO and GRO off on every veth so that the kernel's qdiscs see one packet per
wire segment, as wanlab's do. The wanlab side is a testbed as 'wanlab up'
makes it, with the chain on --up, on the data plane --dataplane chooses.

Tests: tcp is one bulk TCP flow (--flows for more; cubic unless --cc) from
client to server with a UDP probe every 100 ms beside it: goodput, the
probes' median RTT under load and the qdiscs' drops. udp is a UDP flood at 120 % of the
chain's smallest rate (--udp-rate to choose): goodput, mean one-way delay
and drops. Goodput and delay leave out the first --warmup of each run.
A figure is within tolerance when wanlab's is within 0.5 % (goodput), 5 %
(delay) or 10 % (drops) of the kernel's.

--script FILE compares a tree of classes instead: the file's tc lines, on
any one device, run on the hop's device (tc qdisc|class|filter ..., as a
shaping script has them; $NAME from --set), and wanlab builds the tree they
make. Its test, tree, sends a UDP flood per leaf class that a DSCP reaches
through the tree's filters, each at 120 % of the smallest ceil on its way
to the root (--udp-rate for another), all at once, and compares each
class's goodput (within 1 %) and drops (within 10 %).

The kernel must have the chain's disciplines: on kernels without netem,
codel, fq_codel or pie, compare tbf. Needs root and iproute2's tc.`,
		Example: `  wanlab calibrate
  wanlab calibrate --chain "tbf rate 10mbit burst 32k latency 50ms; fq_codel" --flows 4 --runs 3
  wanlab calibrate --chain "netem delay 20ms; tbf rate 10mbit burst 10000 limit 30000" --tests tcp --json
  wanlab calibrate --script dscp3.sh --duration 5s`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			// The flags' zero values would mean the defaults to Config:
			// refuse them instead.
			switch {
			case cfg.Runs < 1:
				return usagef("--runs %d: give at least one run", cfg.Runs)
			case cfg.Flows < 1:
				return usagef("--flows %d: give at least one flow", cfg.Flows)
			case cfg.Flows > maxCalibrateFlows:
				return usagef("--flows %d: give at most %d flows, as wanlab run --streams takes", cfg.Flows, maxCalibrateFlows)
			case cfg.Duration <= 0 || cfg.Warmup <= 0:
				return usagef("--duration %v --warmup %v: give positive times, the duration longer", cfg.Duration, cfg.Warmup)
			}
			if udpRate != "" {
				// The same rates as wanlab run --udp-rate, through the
				// same parser.
				r, err := testrun.ParseRate(udpRate)
				if err != nil {
					return usagef("--udp-rate: %v (or leave it out for 120 %% of the chain's smallest rate)", err)
				}
				cfg.UDPRate = r
			}
			// The flows choose it per socket, which any loaded one can
			// be; a typo must not wait until the namespaces are built.
			if err := lab.CheckLoadedCC(cfg.CC); err != nil {
				return usagef("--cc: %v", err)
			}
			if scriptFile != "" {
				if c.Flags().Changed("chain") {
					return usagef("--chain and --script both give the path: give one")
				}
				b, err := testrun.ReadScriptFile(scriptFile)
				if err != nil {
					return usagef("--script: %v", err)
				}
				cfg.Chain, cfg.Script = "", string(b)
				if cfg.Vars, err = testrun.ScriptVars(vars.ScriptVars); err != nil {
					return usagef("%v", err)
				}
				if !c.Flags().Changed("tests") {
					tests = string(calib.Tree)
				}
			} else if len(vars.ScriptVars) > 0 {
				return usagef("--set gives values to the script's variables, and no --script is given: drop --set, or give --script FILE")
			}
			for _, t := range strings.Split(tests, ",") {
				cfg.Tests = append(cfg.Tests, calib.Test(strings.TrimSpace(t)))
			}
			// Each run of each test runs once on each engine.
			if total := float64(cfg.Runs) * float64(len(cfg.Tests)) * 2 * cfg.Duration.Seconds(); total > maxCalibrateTime.Seconds() {
				return usagef("--runs %d of %d tests on 2 engines for --duration %v would take over %v: lower --runs or --duration", cfg.Runs, len(cfg.Tests), cfg.Duration, maxCalibrateTime)
			}
			if _, err := cfg.Check(); err != nil {
				if scriptFile != "" {
					return usagef("--script %s: %v", scriptFile, strings.TrimPrefix(err.Error(), "calibrate: the script: "))
				}
				return usagef("%v", err)
			}
			if err := enterLab(); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
			defer stop()
			progress := s.err
			if asJSON {
				progress = nil
			}
			ms, err := calib.Run(ctx, cfg, progress)
			if err != nil {
				return err
			}
			rows := calib.Compare(ms)
			if asJSON {
				enc := json.NewEncoder(s.out)
				enc.SetIndent("", "  ")
				return enc.Encode(struct {
					Chain        string              `json:"chain,omitempty"`
					Script       string              `json:"script,omitempty"`
					DataPlane    string              `json:"dataplane"`
					Measurements []calib.Measurement `json:"measurements"`
					Rows         []calib.Row         `json:"rows"`
				}{cfg.Chain, scriptFile, cfg.DataPlane.String(), ms, rows})
			}
			if scriptFile != "" {
				fmt.Fprintf(s.out, "script: %s\n", scriptFile)
			} else {
				fmt.Fprintf(s.out, "chain: %s\n", cfg.Chain)
			}
			fmt.Fprintf(s.out, "wanlab's data plane: %s\n", cfg.DataPlane)
			calib.PrintRows(s.out, rows)
			calib.PrintRouter(s.out, ms)
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&cfg.Chain, "chain", "tbf rate 10mbit burst 32k latency 50ms", "the client-to-server qdiscs in tc syntax, root first")
	f.StringVar(&tests, "tests", "tcp,udp", "the tests, comma-separated: tcp, udp")
	f.DurationVar(&cfg.Duration, "duration", 10*time.Second, "how long each test runs")
	f.DurationVar(&cfg.Warmup, "warmup", 2*time.Second, "how much of each run's start goodput and delay leave out")
	f.IntVar(&cfg.Runs, "runs", 1, "how many times each test runs on each engine")
	f.StringVar(&cfg.CC, "cc", "cubic", "the TCP flows' congestion control")
	f.IntVar(&cfg.Flows, "flows", 1, "how many TCP flows the tcp test runs in parallel")
	f.StringVar(&udpRate, "udp-rate", "", "the UDP flood's rate of payload, as wanlab run --udp-rate takes it: 20mbit or 20M (default 120 % of the chain's smallest rate)")
	registerDataPlane(f, &cfg.DataPlane)
	f.BoolVar(&asJSON, "json", false, "print the measurements and the comparison as JSON")
	f.StringVar(&scriptFile, "script", "", "a file of tc lines on one device that makes a tree of classes (htb, prio) to compare class by class, instead of --chain")
	set := testrun.LookupOption("set")
	f.VarPF(optionFlag{set, &vars}, set.Flag, set.Short, set.Usage()).DefValue = ""
	return c
}

// The bounds of calibrate's flags: as many TCP flows as wanlab run's
// --streams takes, and a day of measuring, as wanlab run's longest run;
// more is a typo that would exhaust file descriptors or look like a hang.
const (
	maxCalibrateFlows = 256
	maxCalibrateTime  = 24 * time.Hour
)
