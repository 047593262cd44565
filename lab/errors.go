package lab

import (
	"errors"
	"fmt"
)

// ErrBadInput is matched (errors.Is) by the errors of Up, Set and Down that
// come from their input — a name, an option or a chain that can never work
// as given — rather than from the machine or the testbed's state. When one
// is returned, nothing was created or changed.
var ErrBadInput = errors.New("bad input")

// badInput marks an error as ErrBadInput while keeping its message.
type badInput struct{ err error }

func (b badInput) Error() string        { return b.err.Error() }
func (b badInput) Unwrap() error        { return b.err }
func (b badInput) Is(target error) bool { return target == ErrBadInput }

// bad marks err as bad input; nil stays nil.
func bad(err error) error {
	if err == nil {
		return nil
	}
	return badInput{err}
}

// badf is fmt.Errorf marked as bad input.
func badf(format string, args ...any) error { return bad(fmt.Errorf(format, args...)) }
