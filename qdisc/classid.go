package qdisc

import "fmt"

// ClassID is a tc handle: a 16-bit major and a 16-bit minor, as tc writes
// "1:10" (both hexadecimal) and the kernel holds it (TC_H_MAKE). A
// qdisc's own handle is MAJ:0 ("1:"); its classes are MAJ:MIN with the
// same major.
type ClassID uint32

// MakeClassID returns the handle major:minor.
func MakeClassID(major, minor uint16) ClassID { return ClassID(major)<<16 | ClassID(minor) }

// Major returns the handle's major (TC_H_MAJ, shifted down).
func (c ClassID) Major() uint16 { return uint16(c >> 16) }

// Minor returns the handle's minor (TC_H_MIN).
func (c ClassID) Minor() uint16 { return uint16(c) }

// String prints the handle as tc does: "1:10", "1:" for minor 0.
func (c ClassID) String() string {
	if c.Minor() == 0 {
		return fmt.Sprintf("%x:", c.Major())
	}
	return fmt.Sprintf("%x:%x", c.Major(), c.Minor())
}

// handleOf returns the handle MAJ:0 of a qdisc whose major is major.
func handleOf(major uint16) ClassID { return MakeClassID(major, 0) }
