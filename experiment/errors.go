package experiment

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Error is a problem with an experiment file, found before any run starts.
// It names the file, the line and what to change.
type Error struct {
	// File is the file's name as the user gave it.
	File string
	// Line is the 1-based line of the offending text; 0 when the problem
	// is the file as a whole.
	Line int
	// Msg says what is wrong and how to fix it.
	Msg string
}

// Error returns "FILE:LINE: MSG" (or "FILE: MSG" without a line).
func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// Errors are the problems of one experiment file, in the order of their
// lines. Loading reports all of them at once, so that a user fixes a file
// in one pass rather than one error per attempt.
type Errors []*Error

// Error returns one problem per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// maxErrors bounds the problems reported for one file: past it, the rest
// are usually consequences of the first ones.
const maxErrors = 20

// problems collects the errors of one file.
type problems struct {
	file string
	list []*problem
	seen map[string]*problem
}

// problem is one error; a template used by many cases fails the same way
// in each, so a problem counts the cases it was found in.
type problem struct {
	line   int
	msg    string
	detail string // of the first case, e.g. the text after substitution
	cases  []string
}

func newProblems(file string) *problems {
	return &problems{file: file, seen: map[string]*problem{}}
}

// addf records a problem at line.
func (p *problems) addf(line int, format string, args ...any) {
	p.addCase(line, "", format, args...)
}

// addCase records a problem at line found in the case described by cas
// (its variables); the same message at the same line is recorded once,
// with the cases it was found in.
func (p *problems) addCase(line int, cas, format string, args ...any) {
	p.addDetail(line, cas, "", format, args...)
}

// addDetail is addCase with a detail that differs from case to case (the
// text a template became) and is shown for the first case only.
func (p *problems) addDetail(line int, cas, detail, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	key := fmt.Sprintf("%d\x00%s", line, msg)
	pr := p.seen[key]
	if pr == nil {
		pr = &problem{line: line, msg: msg, detail: detail}
		p.seen[key] = pr
		p.list = append(p.list, pr)
	}
	if cas != "" {
		pr.cases = append(pr.cases, cas)
	}
}

// err returns the problems sorted by line, at most maxErrors of them, or
// nil when there are none.
func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	var list Errors
	for _, pr := range p.list {
		msg := pr.msg
		if pr.detail != "" {
			msg += " (" + pr.detail + ")"
		}
		switch n := len(pr.cases); {
		case n == 1:
			msg += " (in the case " + pr.cases[0] + ")"
		case n > 1:
			msg += fmt.Sprintf(" (in the case %s and %d more)", pr.cases[0], n-1)
		}
		list = append(list, &Error{File: p.file, Line: pr.line, Msg: msg})
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].Line < list[j].Line })
	if len(list) > maxErrors {
		n := len(list) - maxErrors
		list = append(list[:maxErrors], &Error{File: p.file, Msg: fmt.Sprintf("%d more problems not shown: fix these first", n)})
	}
	return list
}

// AsErrors returns the file problems inside err, if err holds any.
func AsErrors(err error) (Errors, bool) {
	var es Errors
	if errors.As(err, &es) {
		return es, true
	}
	var e *Error
	if errors.As(err, &e) {
		return Errors{e}, true
	}
	return nil, false
}

// nearest returns the candidate closest to word by edit distance, if it is
// close enough to be a likely typo, and "" otherwise.
func nearest(word string, candidates []string) string {
	best, bestD := "", 0
	for _, c := range candidates {
		d := editDistance(strings.ToLower(word), strings.ToLower(c))
		if best == "" || d < bestD {
			best, bestD = c, d
		}
	}
	limit := max(2, len(word)/3)
	if best == "" || bestD > limit {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, by bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
