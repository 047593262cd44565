package tcspec

import (
	"fmt"
	"regexp"
	"strings"
)

// This file reads a shell script as far as scripts of tc lines use the
// shell: lines, backslash continuations, comments, quotes, ";" between
// commands, variables ($VAR, ${VAR}, ${VAR:-default}, assignments, export)
// with the word splitting an unquoted expansion gets ($U32 match ... where
// U32="tc filter add ... u32"), and the redirections and "|| true" with
// which a script silences a command that may fail. Anything else of the
// shell (control flow, pipes, substitutions, other programs) is refused
// with the line it is on: a script is read, never run.

// shellCmd is one simple command of a script, its words expanded.
type shellCmd struct {
	line  int      // the line it starts on, from 1
	nth   int      // its place among the commands of its line, from 1
	words []string // expanded and split as sh would
	// quiet says its errors are silenced (2>/dev/null, || true): a tc
	// command that would fail on the kernel's state is skipped, as the
	// script would go on past it.
	quiet bool
}

// text is the command as it reads after expansion, for messages.
func (c *shellCmd) text() string { return strings.Join(c.words, " ") }

// lineError is an error on one line of a script.
type lineError struct {
	line, nth int
	msg       string
}

func (e *lineError) Error() string { return e.msg }

// shellError reports msg on line, for the nth command of the line.
func shellError(line, nth int, format string, args ...any) *lineError {
	return &lineError{line: line, nth: nth, msg: shortenQuotes(fmt.Sprintf(format, args...))}
}

var (
	varName    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	assignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
)

// shellWords are the words a command may not start with: the shell's
// control flow, which a script of tc lines read by wanlab cannot have.
var shellWords = map[string]bool{
	"if": true, "then": true, "else": true, "elif": true, "fi": true, "case": true, "esac": true,
	"for": true, "while": true, "until": true, "do": true, "done": true, "function": true,
	"{": true, "}": true, "!": true, "select": true, "in": true,
}

// lexScript splits text into its commands, expanding variables from vars
// (which assignments in the script add to, as the shell's environment and
// the script's own variables), in order.
func lexScript(text string, vars map[string]string) ([]shellCmd, error) {
	env := make(map[string]string, len(vars))
	for k, v := range vars {
		env[k] = v
	}
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	var cmds []shellCmd
	for i := 0; i < len(lines); i++ {
		start := i + 1
		logical := lines[i]
		// A backslash at the end of a line (outside a comment) joins
		// the next one to it.
		for strings.HasSuffix(logical, "\\") && !strings.Contains(logical, "#") && i+1 < len(lines) {
			i++
			logical = logical[:len(logical)-1] + " " + lines[i]
		}
		if start == 1 && strings.HasPrefix(logical, "#!") {
			continue
		}
		lx := lexer{s: logical, line: start, env: env}
		cs, err := lx.commands()
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			done, err := builtin(&c, env)
			if err != nil {
				return nil, err
			}
			if done == stop {
				return cmds, nil
			}
			if done == handled {
				continue
			}
			cmds = append(cmds, c)
		}
	}
	return cmds, nil
}

// The outcomes of builtin.
const (
	notBuiltin = iota
	handled
	stop
)

// builtin runs what of the shell a script may use besides tc:
// assignments (NAME=VALUE, export NAME=VALUE), set, echo, true, ":" and
// exit (the end of what is read). Another program is refused.
func builtin(c *shellCmd, env map[string]string) (int, error) {
	w := c.words
	if len(w) == 0 {
		return handled, nil
	}
	name := w[0]
	switch {
	case name == "export" || name == "readonly" || name == "local":
		for _, a := range w[1:] {
			if k, v, ok := strings.Cut(a, "="); ok && varName.MatchString(k) {
				env[k] = v
			} else if !varName.MatchString(a) {
				return 0, shellError(c.line, c.nth, "%q: %s takes NAME=VALUE", c.text(), name)
			}
		}
		return handled, nil
	case name == "set", name == "echo", name == "true", name == ":", name == "printf":
		return handled, nil
	case name == "exit":
		return stop, nil
	case name == "tc" || strings.HasSuffix(name, "/tc") || name == "sudo":
		return notBuiltin, nil
	}
	return 0, shellError(c.line, c.nth, "%q: wanlab reads a script's tc lines, variable assignments and comments, and runs no other program (%s): drop the line, or do what it does another way (wanlab's own options set the hosts and the testbed)", c.text(), name)
}

// lexer reads the commands of one logical line.
type lexer struct {
	s    string
	i    int
	line int
	nth  int
	env  map[string]string
	// expanded counts the bytes the command's variables expanded to.
	expanded int
}

func (l *lexer) fail(format string, args ...any) error {
	return shellError(l.line, l.nth, format, args...)
}

// commands returns the line's commands, split at ";".
func (l *lexer) commands() ([]shellCmd, error) {
	var out []shellCmd
	for {
		l.nth++
		c, more, err := l.command()
		if err != nil {
			return nil, err
		}
		if len(c.words) > 0 || c.quiet {
			out = append(out, c)
		}
		if !more {
			return out, nil
		}
	}
}

// word is a word being read: its text, and whether any of it was
// written (an empty quoted string is a word; nothing is not).
type word struct {
	b       strings.Builder
	started bool
}

// command reads one command up to ";", the end of the line or a comment,
// and says whether another follows on the line.
func (l *lexer) command() (shellCmd, bool, error) {
	c := shellCmd{line: l.line, nth: l.nth}
	// The shell's control flow, before any of its words is expanded.
	first := strings.TrimLeft(l.s[l.i:], " \t")
	if end := strings.IndexAny(first, " \t;"); end >= 0 {
		first = first[:end]
	}
	if shellWords[first] {
		return c, false, l.fail("%q: wanlab reads a script's tc lines, not shell control flow (%s): keep the tc lines that run, e.g. those of a start branch", strings.TrimSpace(l.s), first)
	}
	var w word
	flush := func() {
		if w.started {
			c.words = append(c.words, w.b.String())
		}
		w = word{}
	}
	l.expanded = 0
	for l.i < len(l.s) {
		ch := l.s[l.i]
		switch {
		case ch == ' ' || ch == '\t':
			flush()
			l.i++
		case ch == '#' && !w.started:
			l.i = len(l.s)
		case ch == ';':
			l.i++
			if l.i < len(l.s) && l.s[l.i] == ';' {
				return c, false, l.fail("\";;\" ends a case branch: wanlab reads tc lines, not shell control flow; keep the tc lines of the branch you want")
			}
			flush()
			return l.finish(c)
		case ch == '\\':
			if l.i+1 < len(l.s) {
				w.b.WriteByte(l.s[l.i+1])
				w.started = true
			}
			l.i += 2
		case ch == '\'':
			end := strings.IndexByte(l.s[l.i+1:], '\'')
			if end < 0 {
				return c, false, l.fail("an unterminated ' quote: close it on the same line")
			}
			w.b.WriteString(l.s[l.i+1 : l.i+1+end])
			w.started = true
			l.i += end + 2
		case ch == '"':
			if err := l.doubleQuoted(&w); err != nil {
				return c, false, err
			}
		case ch == '$':
			fields, err := l.expand()
			if err != nil {
				return c, false, err
			}
			// An unquoted expansion is split into words at blanks.
			for j, f := range fields {
				if j > 0 {
					flush()
				}
				if f != "" || j > 0 {
					w.b.WriteString(f)
					w.started = w.started || f != ""
				}
			}
		case ch == '`':
			return c, false, l.fail("a command substitution (`...`): wanlab runs no commands while it reads a script; write the value")
		case ch == '(' || ch == ')':
			return c, false, l.fail("%q: wanlab reads a script's tc lines, not shell control flow or subshells: keep the tc lines that run, e.g. those of a start branch", strings.TrimSpace(l.s))
		case ch == '|' || ch == '&' || ch == '<' || ch == '>':
			flush()
			quiet, err := l.operator(&c)
			if err != nil {
				return c, false, err
			}
			c.quiet = c.quiet || quiet
		default:
			w.b.WriteByte(ch)
			w.started = true
			l.i++
		}
	}
	flush()
	return l.finish(c)
}

// finish handles an assignment command and says whether more follows.
func (l *lexer) finish(c shellCmd) (shellCmd, bool, error) {
	more := l.i < len(l.s)
	if len(c.words) == 0 {
		return c, more, nil
	}
	if shellWords[c.words[0]] {
		return c, more, l.fail("%q: wanlab reads a script's tc lines, not shell control flow (%s): keep the tc lines that run, e.g. those of a start branch", c.text(), c.words[0])
	}
	// NAME=VALUE ... : assignments before a command.
	n := 0
	for n < len(c.words) && assignment.MatchString(c.words[n]) {
		n++
	}
	if n > 0 {
		if n < len(c.words) {
			return c, more, l.fail("%q: a variable set for one command only: set it on a line of its own", c.text())
		}
		for _, a := range c.words {
			k, v, _ := strings.Cut(a, "=")
			l.env[k] = v
		}
		c.words = nil
	}
	return c, more, nil
}

// doubleQuoted reads "..." into w: $ expands without splitting; a
// backslash escapes $, `, ", \ and a newline.
func (l *lexer) doubleQuoted(w *word) error {
	w.started = true
	l.i++
	for l.i < len(l.s) {
		ch := l.s[l.i]
		switch ch {
		case '"':
			l.i++
			return nil
		case '\\':
			if l.i+1 < len(l.s) && strings.IndexByte("$`\"\\", l.s[l.i+1]) >= 0 {
				w.b.WriteByte(l.s[l.i+1])
				l.i += 2
				continue
			}
			w.b.WriteByte(ch)
			l.i++
		case '$':
			fields, err := l.expandWhole()
			if err != nil {
				return err
			}
			w.b.WriteString(fields)
		case '`':
			return l.fail("a command substitution (`...`): wanlab runs no commands while it reads a script; write the value")
		default:
			w.b.WriteByte(ch)
			l.i++
		}
	}
	return l.fail("an unterminated \" quote: close it on the same line")
}

// expand reads an unquoted $... and returns its value split at blanks.
func (l *lexer) expand() ([]string, error) {
	v, err := l.expandWhole()
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(v) == "" {
		return []string{""}, nil
	}
	fields := strings.Fields(v)
	// Blanks at either end end the word before or start the next one.
	if v[0] == ' ' || v[0] == '\t' {
		fields = append([]string{""}, fields...)
	}
	if last := v[len(v)-1]; last == ' ' || last == '\t' {
		fields = append(fields, "")
	}
	return fields, nil
}

// expandWhole reads $NAME, ${NAME}, ${NAME:-WORD} or ${NAME-WORD} at l.i
// and returns its value.
func (l *lexer) expandWhole() (string, error) {
	l.i++ // the $
	if l.i >= len(l.s) {
		return "$", nil
	}
	switch ch := l.s[l.i]; {
	case ch == '{':
		end := strings.IndexByte(l.s[l.i:], '}')
		if end < 0 {
			return "", l.fail("${ without its }: write ${NAME}")
		}
		body := l.s[l.i+1 : l.i+end]
		l.i += end + 1
		return l.lookup(body)
	case ch == '(':
		return "", l.fail("a command substitution ($(...)): wanlab runs no commands while it reads a script; write the value")
	case isDigit(ch) || strings.IndexByte("@*#?$!-", ch) >= 0:
		return "", l.fail("$%c is the shell's own (a script's arguments, a status): wanlab reads the script without arguments; write the value, or use a named variable set with --set NAME=VALUE", ch)
	case ch == '_' || ch >= 'A' && ch <= 'Z' || ch >= 'a' && ch <= 'z':
		j := l.i
		for j < len(l.s) && (l.s[j] == '_' || isAlnum(l.s[j])) {
			j++
		}
		name := l.s[l.i:j]
		l.i = j
		return l.lookup(name)
	}
	return "$", nil
}

// maxExpanded bounds a command's text after its variables are expanded:
// a script of tc lines has no use for more, and variables that double
// each other would otherwise grow without end.
const maxExpanded = 1 << 16

// lookup is the value of NAME, NAME:-WORD or NAME-WORD.
func (l *lexer) lookup(body string) (string, error) {
	name, dflt, hasDefault, colon := body, "", false, false
	if i := strings.IndexAny(body, ":-=+?"); i >= 0 {
		name = body[:i]
		rest := body[i:]
		switch {
		case strings.HasPrefix(rest, ":-"):
			dflt, hasDefault, colon = rest[2:], true, true
		case strings.HasPrefix(rest, "-"):
			dflt, hasDefault = rest[1:], true
		default:
			return "", l.fail("${%s}: wanlab reads ${NAME}, ${NAME:-DEFAULT} and ${NAME-DEFAULT}; give the value another way", body)
		}
	}
	if !varName.MatchString(name) {
		return "", l.fail("${%s}: not a variable name; write ${NAME}", body)
	}
	v, ok := l.env[name]
	switch {
	case hasDefault && (!ok || colon && v == ""):
		v = dflt
	case !ok:
		return "", l.fail("$%s is not set: give its value with --set %s=VALUE (or set it in the script, or in the experiment's vars)", name, name)
	}
	if l.expanded += len(v); l.expanded > maxExpanded {
		return "", l.fail("the command is over %d KiB once its variables are expanded: no tc line is; are the variables right?", maxExpanded>>10)
	}
	return v, nil
}

// devNull matches a redirection to /dev/null or of one stream into the
// other: what a script writes to silence a command.
var devNull = regexp.MustCompile(`^(&|[0-9]?)>>?(/dev/null|&[0-9])?$`)

// operator reads an operator at l.i: a redirection to /dev/null or
// "|| true" (or "|| :") silence the command; anything else is refused.
func (l *lexer) operator(c *shellCmd) (bool, error) {
	rest := l.s[l.i:]
	if strings.HasPrefix(rest, "||") {
		tail := strings.Fields(rest[2:])
		if len(tail) >= 1 && (tail[0] == "true" || tail[0] == ":") {
			// Consume "|| true" and nothing else but a ";" after it.
			after := strings.TrimSpace(rest[2:])
			after = strings.TrimSpace(after[len(tail[0]):])
			l.i = len(l.s) - len(after)
			if after != "" && after[0] != ';' && after[0] != '#' {
				return false, l.fail("%q: after \"|| %s\" wanlab reads only the end of the line or \";\"", strings.TrimSpace(l.s), tail[0])
			}
			return true, nil
		}
		return false, l.fail("%q: \"||\" runs another program when the command fails: wanlab reads tc lines only; silence a line that may fail with 2>/dev/null or \"|| true\"", strings.TrimSpace(l.s))
	}
	// A redirection: the operator, and its target if apart.
	j := l.i
	for j < len(l.s) && strings.IndexByte("&<>0123456789", l.s[j]) >= 0 {
		j++
	}
	op := l.s[l.i:j]
	// A digit before the operator belongs to it ("2>"): the caller has
	// already flushed it as a word of its own.
	if n := len(c.words); n > 0 && len(c.words[n-1]) == 1 && isDigit(c.words[n-1][0]) && l.i > 0 && l.s[l.i-1] != ' ' && l.s[l.i-1] != '\t' {
		op = c.words[n-1] + op
		c.words = c.words[:n-1]
	}
	k := j
	for k < len(l.s) && l.s[k] != ' ' && l.s[k] != '\t' && l.s[k] != ';' {
		k++
	}
	target := l.s[j:k]
	full := op + target
	if target == "" && strings.HasSuffix(op, ">") {
		// "2> /dev/null": the target is the next word.
		m := k
		for m < len(l.s) && (l.s[m] == ' ' || l.s[m] == '\t') {
			m++
		}
		n := m
		for n < len(l.s) && l.s[n] != ' ' && l.s[n] != '\t' && l.s[n] != ';' {
			n++
		}
		target, full, k = l.s[m:n], op+l.s[m:n], n
	}
	if strings.ContainsAny(op, "<|") || !devNull.MatchString(full) {
		return false, l.fail("%q: wanlab reads tc lines only, with no pipes, files, subshells or commands chained with && (%s); keep the tc command, and silence it with 2>/dev/null if it may fail", strings.TrimSpace(l.s), full)
	}
	l.i = k
	return true, nil
}
