package main

import (
	"context"
	"syscall"

	"github.com/spf13/cobra"

	"wanlab/internal/outfile"
	"wanlab/results"
)

func newExportCommand(s *streams) *cobra.Command {
	var flent string
	c := &cobra.Command{
		Use:   "export --flent OUT IN",
		Short: "Write a saved results file in Flent's data format",
		Long: `export reads a results file that 'wanlab run' wrote and writes it as Flent's
data file (format version 4, gzip-compressed when OUT ends in .gz), which
flent 2.1.1 and later read: flent -i OUT -f stats prints the figures
'wanlab show' prints, data points included, and flent -i OUT -p all_scaled
(or totals, box_totals, ping_cdf) draws Flent's own plots. Flent loads a
data file by running the test it names, so a run of one of wanlab's own
tests goes under the Flent test whose series it shares, its load series
renamed: tfrc_upload, quic_upload and l4s_upload as tcp_upload (TCP
upload), tfrc_download, quic_download and l4s_download as tcp_download
(l4s_cubic has no Flent layout: Flent has no test of one L4S and one TCP
upload), custom as
tcp_bidirectional (its Custom upload and Custom download as TCP upload and
TCP download); the file's title and metadata (WANLAB) name the run's test.
docs/results-format.md says how each figure maps.`,
		Example: `  wanlab export --flent rrul.flent.gz wanlab-rrul-20260101-120000.json.gz
  flent -i rrul.flent.gz -p all_scaled -o rrul.png`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if flent == "" {
				return usagef("export needs --flent OUT, the Flent file to write (e.g. --flent run.flent.gz)")
			}
			if err := outfile.Check(flent, outfile.Options{Label: "--flent", Suggest: "run.flent.gz"}); err != nil {
				return usagef("%v", err)
			}
			if err := notAnInput("--flent", flent, args[0]); err != nil {
				return err
			}
			doc, err := readResults(args[0])
			if err != nil {
				return err
			}
			if err := results.CheckFlent(doc); err != nil {
				return usagef("%s: %v", args[0], err)
			}
			ctx, stop := outfile.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
			defer stop()
			return writeFlent(ctx, s, flent, doc)
		},
	}
	c.Flags().StringVar(&flent, "flent", "", "the Flent data file to write, e.g. run.flent.gz (- for stdout)")
	return c
}
