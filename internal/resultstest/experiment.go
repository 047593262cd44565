package resultstest

import (
	"fmt"
	"os"
	"path/filepath"

	"wanlab/experiment"
	"wanlab/results"
)

// Case is one case of a synthetic experiment: its variables' values, the
// test its runs run and the path they cross.
type Case struct {
	Vars map[string]string
	Test string
	Path Path
}

// Experiment writes into dir what `wanlab experiment run` leaves there
// for an experiment called name whose cases are cases (variables names
// their variables in order): each case's repeat runs, built by RunWith
// with the lengths l, each seeded apart and titled as the experiment
// titles them, in results files named as it names them (but .json, not
// compressed); and the index
// that lists them, every run complete. edit, if not nil, may change each
// document before it is written (a router report, a partial run); it is
// given the case and the repetition (from 1). It returns the index.
func Experiment(dir, name string, variables []string, cases []Case, repeat int, l Lengths,
	edit func(d *results.Document, c int, rep int)) (*experiment.Index, error) {
	ix := &experiment.Index{Format: experiment.IndexFormat, Version: experiment.IndexVersion, Name: name,
		File:   experiment.IndexFile{Name: name + ".yaml"},
		Repeat: repeat, Variables: variables, Cases: []experiment.IndexCase{}}
	for ci, c := range cases {
		ic := experiment.IndexCase{Number: ci + 1, Vars: c.Vars, Path: results.Path{Up: c.Path.Chain(), Down: c.Path.Chain()}}
		label := ""
		for _, v := range variables {
			label += " " + v + "=" + c.Vars[v]
		}
		for rep := 1; rep <= repeat; rep++ {
			seed := uint64(ci*repeat + rep)
			r := experiment.IndexRun{Test: c.Test, Repetition: rep, Seed: seed,
				Title:  fmt.Sprintf("%s%s #%d", name, label, rep),
				File:   fmt.Sprintf("c%03d-%s-r%d.json", ci+1, c.Test, rep),
				Status: experiment.StatusComplete, Options: []experiment.Option{}}
			d := RunWith(c.Test, r.Title, seed, c.Path, l)
			if edit != nil {
				edit(d, ci, rep)
			}
			if d.Run.Partial {
				r.Status = experiment.StatusPartial
			}
			if err := writeDoc(filepath.Join(dir, r.File), d); err != nil {
				return nil, err
			}
			ic.Runs = append(ic.Runs, r)
		}
		ix.Cases = append(ix.Cases, ic)
	}
	data, err := ix.Encode()
	if err != nil {
		return nil, err
	}
	return ix, os.WriteFile(filepath.Join(dir, experiment.IndexName), data, 0o644)
}

// writeDoc writes a document as results.WriteFile does, but neither
// compressed nor synced to the disk, which would take the most of a
// test's time: its files live as long as the test, and a reader tells
// JSON from gzip by its first bytes.
func writeDoc(path string, d *results.Document) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := d.Encode(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
