package tcspec

import (
	"fmt"
	"strings"
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

// Error returns "tcspec: KIND: MSG", with the chain position when the
// offending qdisc is not the first.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("tcspec: ")
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

// failf makes an *Error for kind about token.
func failf(kind, token, format string, args ...any) *Error {
	return &Error{Kind: kind, Token: token, Msg: fmt.Sprintf(format, args...)}
}
