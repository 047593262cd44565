package main

import (
	"errors"
	"io/fs"
	"strings"

	"github.com/spf13/cobra"

	"wanlab/results"
)

func newShowCommand(s *streams) *cobra.Command {
	var asJSON, flowSeries bool
	c := &cobra.Command{
		Use:   "show FILE [--json] [--flow-series]",
		Short: "Print the text summary of a saved results file",
		Long: `show reads a results file that 'wanlab run' wrote (gzip-compressed or not)
and prints the same summary the run printed: Flent's statistics per series,
the flows, the fidelity verdict and the router's figures. With --json it
prints the document itself; with --flow-series it also lists every flow's own
series (TCP_INFO at both ends, the router's per-flow view).`,
		Example: `  wanlab show wanlab-rrul-20260101-120000.json.gz
  wanlab show run.json.gz --json | jq '.series[] | {name, mean: .summary.mean}'`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			doc, err := readResults(args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return doc.Encode(s.out)
			}
			return results.WriteSummary(s.out, doc, flowSeries)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the document as JSON")
	c.Flags().BoolVar(&flowSeries, "flow-series", false, "also summarise every flow's own series (TCP_INFO at both ends, the router's view)")
	return c
}

// readResults reads a results file for a view: a file that is missing or
// not a results document is the user's input, so its error exits 2, with a
// message that names the file once and says what is wrong.
func readResults(path string) (*results.Document, error) {
	doc, err := results.ReadFile(path)
	if err != nil {
		return nil, resultsError(path, err)
	}
	return doc, nil
}

// resultsError is the usage error for a results file that ReadFile
// refused.
func resultsError(path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return usagef("%s does not exist: give a results file that wanlab run wrote", path)
	}
	// ReadFile's errors name the file, but infile's "open PATH: ..." does
	// so in its own way.
	msg := strings.Replace(unwrapPathError(err).Error(), "results: ", "", 1)
	if !strings.HasPrefix(msg, path+": ") && !strings.HasPrefix(msg, path+" is ") {
		msg = path + ": " + msg
	}
	return usagef("%s", msg)
}
