package experiment

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"wanlab/internal/infile"
)

// A reference file holds published figures to show beside an
// experiment's own (a seed's tables, a paper's): tables show them as a
// column with the ratio of wanlab's figure to each, sweep graphs as a line
// of their own. It is CSV (RFC 4180) with a header row naming its columns:
//
//   - one column per experiment variable the figures depend on, holding
//     the variable's value as the experiment file writes it (a variable
//     the file leaves out matches every value);
//   - "series": the series the figure is of, as the results name it
//     ("TCP upload", "Ping (ms) ICMP"); empty for each run's main series,
//     the one a table shows by default;
//   - "stat": the statistic, one of Stats (mean, median, ...);
//   - "value": the figure, in the series' unit;
//   - "source": where the figure comes from (a paper, a message, a
//     table), shown with it.
//
// Lines that start with # are comments. An example, for E1's TCP
// goodput at each delay:
//
//	# seed 001: goodput of one TCP flow on 100 Mbit/s, 2008
//	delay,transport,series,stat,value,source
//	10ms,reno,,mean,93.9,"seed 001, table of results"
const (
	refSeries = "series"
	refStat   = "stat"
	refValue  = "value"
	refSource = "source"
)

// maxReferenceFile bounds a reference file: a table of published figures
// is a few kilobytes.
const maxReferenceFile = 4 << 20

// Reference is a reference file's figures.
type Reference struct {
	// Path is the file, for messages.
	Path string
	// Vars are the variables its figures depend on, in its columns' order.
	Vars []string
	// Rows are its figures in the file's order.
	Rows []ReferenceRow
}

// ReferenceRow is one published figure.
type ReferenceRow struct {
	// Line is the row's line in the file.
	Line int
	// Vars are the values of the Reference's Vars for this figure.
	Vars map[string]string
	// Series, Stat, Value and Source are the row's columns.
	Series, Stat string
	Value        float64
	Source       string
}

// ReadReference reads a reference file (see the format above).
func ReadReference(path string) (*Reference, error) {
	b, err := infile.Read(path, maxReferenceFile)
	if err != nil {
		return nil, fmt.Errorf("--reference: %w", err)
	}
	return ParseReference(path, b)
}

// ParseReference parses a reference file's content; name is its path, for
// messages.
func ParseReference(name string, content []byte) (*Reference, error) {
	r := csv.NewReader(bytes.NewReader(content))
	r.Comment = '#'
	r.FieldsPerRecord = 0
	header, err := r.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("%s: empty: give a header row (VARIABLES...,series,stat,value,source) and a row per figure", name)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	ref := &Reference{Path: name}
	col := map[string]int{}
	for i, h := range header {
		h = strings.TrimSpace(h)
		if h == "" {
			return nil, fmt.Errorf("%s: column %d of the header has no name", name, i+1)
		}
		if _, dup := col[h]; dup {
			return nil, fmt.Errorf("%s: column %q appears twice in the header", name, h)
		}
		col[h] = i
		switch h {
		case refSeries, refStat, refValue, refSource:
		default:
			ref.Vars = append(ref.Vars, h)
		}
	}
	for _, need := range []string{refSeries, refStat, refValue, refSource} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("%s: the header has no %q column: it needs the variables' columns, then series, stat, value and source", name, need)
		}
	}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		line, _ := r.FieldPos(0)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		row := ReferenceRow{Line: line, Vars: map[string]string{}}
		for _, v := range ref.Vars {
			row.Vars[v] = strings.TrimSpace(rec[col[v]])
		}
		row.Series = strings.TrimSpace(rec[col[refSeries]])
		row.Stat = strings.TrimSpace(rec[col[refStat]])
		row.Source = strings.TrimSpace(rec[col[refSource]])
		if !contains(Stats, row.Stat) {
			return nil, fmt.Errorf("%s:%d: stat %q: use one of %s", name, line, row.Stat, strings.Join(Stats, ", "))
		}
		text := strings.TrimSpace(rec[col[refValue]])
		row.Value, err = strconv.ParseFloat(text, 64)
		if err != nil || math.IsNaN(row.Value) || math.IsInf(row.Value, 0) {
			return nil, fmt.Errorf("%s:%d: value %q is not a number", name, line, text)
		}
		if row.Source == "" {
			return nil, fmt.Errorf("%s:%d: the source is empty: say where the figure comes from", name, line)
		}
		for _, other := range ref.Rows {
			if sameFigure(other, row, ref.Vars) {
				return nil, fmt.Errorf("%s:%d: the same figure as line %d (the same variables, series and stat)", name, line, other.Line)
			}
		}
		ref.Rows = append(ref.Rows, row)
	}
	if len(ref.Rows) == 0 {
		return nil, fmt.Errorf("%s: no figures: give a row per figure after the header", name)
	}
	return ref, nil
}

func sameFigure(a, b ReferenceRow, vars []string) bool {
	if a.Series != b.Series || a.Stat != b.Stat {
		return false
	}
	for _, v := range vars {
		if a.Vars[v] != b.Vars[v] {
			return false
		}
	}
	return true
}

// Lookup returns the figure for a case's variables, a series and a
// statistic. mainSeries says that series is the table's default, which a
// row with an empty series stands for. A variable the reference has and
// vars lacks never matches.
func (ref *Reference) Lookup(vars map[string]string, series string, mainSeries bool, stat string) (ReferenceRow, bool) {
	for _, row := range ref.Rows {
		if row.Stat != stat || !(row.Series == series || row.Series == "" && mainSeries) {
			continue
		}
		match := true
		for _, v := range ref.Vars {
			if got, ok := vars[v]; !ok || got != row.Vars[v] {
				match = false
				break
			}
		}
		if match {
			return row, true
		}
	}
	return ReferenceRow{}, false
}

// CheckVariables refuses a reference whose columns name variables the
// experiment does not have (a typo would match nothing, silently).
func (ref *Reference) CheckVariables(have []string) error {
	for _, v := range ref.Vars {
		if !contains(have, v) {
			return fmt.Errorf("%s: column %q is not a variable of the experiment (its variables are %s)", ref.Path, v, strings.Join(have, ", "))
		}
	}
	return nil
}
