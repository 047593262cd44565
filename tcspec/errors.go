package tcspec

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Error is a parse error. It names the offending word and says what tc
// would accept instead.
type Error struct {
	// Kind is the qdisc whose options were being read ("netem"), or "" for
	// an error in the tc command line around it.
	Kind string
	// Token is the offending word as written ("10mz"), or "" when the
	// problem is something missing.
	Token string
	// Index is the position of the offending qdisc in the chain, counting
	// from 0; Parse always reports 0.
	Index int
	// Msg says what is wrong and how to fix it.
	Msg string
}

// Error returns "KIND: MSG", with the chain position when the offending
// qdisc is not the first.
func (e *Error) Error() string {
	var b strings.Builder
	switch {
	case e.Kind != "" && e.Index > 0:
		fmt.Fprintf(&b, "%s (qdisc %d of the chain): ", e.Kind, e.Index+1)
	case e.Kind != "":
		b.WriteString(e.Kind + ": ")
	case e.Index > 0:
		fmt.Fprintf(&b, "qdisc %d of the chain: ", e.Index+1)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// failf makes an *Error for kind about token. Every quoted string in the
// message is shortened as Quote does, so that a pasted file is not echoed
// whole.
func failf(kind, token, format string, args ...any) *Error {
	if len(token) > maxQuoted {
		token = token[:runeCut(token)] + "..."
	}
	return &Error{Kind: kind, Token: token, Msg: shortenQuotes(fmt.Sprintf(format, args...))}
}

// maxQuoted is the most bytes of user input a message quotes.
const maxQuoted = 60

// Quote returns s quoted as %q does; when s is longer than 60 bytes it
// quotes its beginning and says how long it is ("netem delay 1ms aaaa"...
// (120034 bytes)), so that a message about a pasted file or a runaway
// argument stays readable.
func Quote(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%q... (%d bytes)", s[:runeCut(s)], len(s))
}

// runeCut is where to cut s, longer than maxQuoted, to keep at most
// maxQuoted bytes of whole runes.
func runeCut(s string) int {
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return cut
}

// shortenQuotes applies Quote to every quoted string in msg.
func shortenQuotes(msg string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(msg, '"')
		if i < 0 {
			b.WriteString(msg)
			return b.String()
		}
		q, err := strconv.QuotedPrefix(msg[i:])
		if err != nil {
			b.WriteString(msg)
			return b.String()
		}
		b.WriteString(msg[:i])
		msg = msg[i+len(q):]
		if s, err := strconv.Unquote(q); err == nil && len(s) > maxQuoted {
			q = Quote(s)
		}
		b.WriteString(q)
	}
}
