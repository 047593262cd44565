package netns

import (
	"fmt"
	"strings"
)

// Prefix starts the name of every namespace, device and process that wanlab
// creates, so that its leftovers can be told apart from everything else.
const Prefix = "wl-"

// MaxIfNameLen is the longest interface name Linux accepts (IFNAMSIZ minus
// the terminating NUL).
const MaxIfNameLen = 15

// maxNameLen bounds namespace, testbed and role names; it keeps paths and
// messages readable and is far below the file-name limit.
const maxNameLen = 64

// CheckName reports whether name is acceptable for a wanlab namespace: it
// starts with Prefix and otherwise holds only lowercase letters, digits, '-'
// and '_'.
func CheckName(name string) error {
	if !strings.HasPrefix(name, Prefix) {
		return fmt.Errorf("namespace name %q must start with %q", name, Prefix)
	}
	return checkWord("namespace name", name, maxNameLen)
}

// CheckIfName reports whether name is a valid interface name: 1 to
// MaxIfNameLen bytes of letters, digits, '-', '_' or '.'.
func CheckIfName(name string) error {
	if name == "" || len(name) > MaxIfNameLen {
		return fmt.Errorf("interface name %q must be 1 to %d bytes long", name, MaxIfNameLen)
	}
	for _, c := range []byte(name) {
		if !isWordByte(c) && c != '.' && !(c >= 'A' && c <= 'Z') {
			return fmt.Errorf("interface name %q: byte %q is not allowed (use letters, digits, '-', '_', '.')", name, c)
		}
	}
	return nil
}

func checkWord(what, s string, max int) error {
	if s == "" || len(s) > max {
		return fmt.Errorf("%s %q must be 1 to %d bytes long", what, s, max)
	}
	for _, c := range []byte(s) {
		if !isWordByte(c) {
			return fmt.Errorf("%s %q: byte %q is not allowed (use a-z, 0-9, '-', '_')", what, s, c)
		}
	}
	return nil
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}
