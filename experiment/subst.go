package experiment

import (
	"fmt"
	"strings"
)

// Substitute replaces every ${name} in text by lookup(name). "$$" stands
// for a literal "$"; any other "$" is an error, since a bare $name is
// almost always a ${name} with its braces forgotten (tc syntax has no
// "$"). It returns the names it replaced, in order of appearance.
func Substitute(text string, lookup func(name string) (string, bool)) (string, []string, error) {
	if !strings.Contains(text, "$") {
		return text, nil, nil
	}
	var b strings.Builder
	var used []string
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c != '$' {
			b.WriteByte(c)
			continue
		}
		switch {
		case i+1 < len(text) && text[i+1] == '$':
			b.WriteByte('$')
			i++
		case i+1 < len(text) && text[i+1] == '{':
			end := strings.IndexByte(text[i+2:], '}')
			if end < 0 {
				return "", used, fmt.Errorf("%q: ${ without a closing }: write ${name}", text)
			}
			name := text[i+2 : i+2+end]
			if !varName.MatchString(name) {
				return "", used, fmt.Errorf("%q: ${%s} is not a variable name: use letters, digits and _ (write $$ for a literal $)", text, name)
			}
			v, ok := lookup(name)
			if !ok {
				return "", used, &undefinedError{name: name}
			}
			b.WriteString(v)
			used = append(used, name)
			i += 2 + end
		default:
			word := text[i:]
			if j := strings.IndexAny(word, " ;\t"); j > 0 {
				word = word[:j]
			}
			return "", used, fmt.Errorf("%q: a bare %q: write ${%s} for a variable, or $$ for a literal $", text, word, strings.TrimPrefix(word, "$"))
		}
	}
	return b.String(), used, nil
}

// undefinedError is a ${name} with no variable of that name.
type undefinedError struct{ name string }

func (e *undefinedError) Error() string { return fmt.Sprintf("${%s} is not defined", e.name) }
