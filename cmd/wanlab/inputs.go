package main

import (
	"os"
	"path/filepath"
	"strings"
)

// notAnInput refuses an output (given with the flag label) that is one
// of the files a command reads: an input given by name (a results file,
// an experiment's summary file), or a file an input directory holds that
// is read from it (its index.json, its results files). Writing the view
// there would replace the measurements it was made from. Outputs that do
// not exist yet, and "-", are never inputs.
func notAnInput(label, output string, inputs ...string) error {
	if output == "-" {
		return nil
	}
	out, err := os.Stat(output)
	if err != nil {
		return nil
	}
	outDir, dirErr := os.Stat(filepath.Dir(output))
	for _, in := range inputs {
		st, err := os.Stat(in)
		if err != nil {
			continue
		}
		if os.SameFile(st, out) {
			return usagef("%s %s is the input %s, which would be lost: give another name", label, output, in)
		}
		if st.IsDir() && dirErr == nil && os.SameFile(st, outDir) && readFromDir(output) {
			return usagef("%s %s is a file the directory %s is read for (its index or a run's results), which would be lost: give another name", label, output, in)
		}
	}
	return nil
}

// readFromDir reports whether a file of this name in a results directory
// is one the views read: a results file or an experiment's index, both
// JSON, compressed or not.
func readFromDir(name string) bool {
	return strings.HasSuffix(name, ".json") || strings.HasSuffix(name, ".json.gz")
}
