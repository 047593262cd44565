package experiment

import (
	"errors"
	"fmt"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// The YAML parser is github.com/goccy/go-yaml: kept up, pure Go, and the
// one whose syntax errors carry the exact line and column of the fault
// (go.yaml.in/yaml/v3 reports some, such as an unclosed [, a line early),
// with duplicate keys refused by the parser itself. Its syntax tree keeps
// every scalar's text as written ("10ms", "1e3", "0x10" stay text), which
// is what tc syntax and run options want. This file turns that tree into
// node, a small tree of this package's own, so the rest of the package
// does not depend on the parser's types.

// node is a YAML value: a scalar, a mapping or a sequence, with its line.
// Aliases are resolved: an aliased value is the anchored node itself.
type node struct {
	kind  nodeKind
	null  bool   // an empty value or ~
	value string // a scalar's text, unquoted
	line  int
	// content holds a mapping's keys and values in turn, or a sequence's
	// items.
	content []*node
	merge   bool // a merge key (<<)
}

type nodeKind uint8

const (
	scalarNode nodeKind = iota
	mappingNode
	sequenceNode
)

// maxNodes bounds the values a file may expand to through aliases: a few
// lines of nested aliases can otherwise stand for billions of values.
const maxNodes = 100_000

// parseYAML parses one YAML document into a node tree; an empty document
// is nil.
func parseYAML(content []byte) (*node, error) {
	f, err := parser.ParseBytes(content, 0)
	if err != nil {
		return nil, err
	}
	var docs []*ast.DocumentNode
	for _, d := range f.Docs {
		if d != nil && d.Body != nil {
			docs = append(docs, d)
		}
	}
	if len(docs) == 0 {
		return nil, nil
	}
	if len(docs) > 1 {
		return nil, &posError{line: lineOf(docs[1].Body), msg: "a second YAML document (after ---): an experiment file holds one"}
	}
	c := &converter{anchors: map[string]*node{}, sizes: map[*node]int{}}
	n, err := c.convert(docs[0].Body)
	if err != nil {
		return nil, err
	}
	return n, nil
}

// posError is a problem found while converting the tree, at a line.
type posError struct {
	line int
	msg  string
}

func (e *posError) Error() string { return e.msg }

type converter struct {
	anchors map[string]*node
	sizes   map[*node]int // expanded size of each node
	total   int
}

func lineOf(n ast.Node) int {
	if t := n.GetToken(); t != nil && t.Position != nil {
		return t.Position.Line
	}
	return 0
}

func (c *converter) convert(a ast.Node) (*node, error) {
	line := lineOf(a)
	switch n := a.(type) {
	case *ast.NullNode:
		return c.leaf(&node{null: true, line: line})
	case *ast.StringNode:
		return c.leaf(&node{value: n.Value, line: line})
	case *ast.LiteralNode:
		return c.leaf(&node{value: n.Value.Value, line: line})
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		return c.leaf(&node{value: a.GetToken().Value, line: line})
	case *ast.TagNode:
		return c.convert(n.Value)
	case *ast.AnchorNode:
		v, err := c.convert(n.Value)
		if err != nil {
			return nil, err
		}
		c.anchors[n.Name.String()] = v
		return v, nil
	case *ast.AliasNode:
		name := n.Value.String()
		v, ok := c.anchors[name]
		if !ok {
			return nil, &posError{line: line, msg: fmt.Sprintf("alias *%s names no anchor &%s defined before it", name, name)}
		}
		return v, c.grow(c.sizes[v], line)
	case *ast.MappingNode:
		m := &node{kind: mappingNode, line: line}
		size := 1
		for _, mv := range n.Values {
			k, v, err := c.pair(mv)
			if err != nil {
				return nil, err
			}
			m.content = append(m.content, k, v)
			size += c.sizes[k] + c.sizes[v]
		}
		c.sizes[m] = size
		return m, c.grow(1, line)
	case *ast.MappingValueNode:
		k, v, err := c.pair(n)
		if err != nil {
			return nil, err
		}
		m := &node{kind: mappingNode, line: k.line, content: []*node{k, v}}
		c.sizes[m] = 1 + c.sizes[k] + c.sizes[v]
		return m, c.grow(1, line)
	case *ast.SequenceNode:
		s := &node{kind: sequenceNode, line: line}
		size := 1
		for _, it := range n.Values {
			v, err := c.convert(it)
			if err != nil {
				return nil, err
			}
			s.content = append(s.content, v)
			size += c.sizes[v]
		}
		c.sizes[s] = size
		return s, c.grow(1, line)
	case *ast.MergeKeyNode:
		return c.leaf(&node{value: "<<", merge: true, line: line})
	case *ast.CommentGroupNode, *ast.CommentNode:
		return c.leaf(&node{null: true, line: line})
	}
	return nil, &posError{line: line, msg: fmt.Sprintf("unsupported YAML construct %s: write plain values, lists and mappings", a.Type())}
}

func (c *converter) pair(mv *ast.MappingValueNode) (*node, *node, error) {
	var keyNode ast.Node = mv.Key
	if mk, ok := mv.Key.(*ast.MappingKeyNode); ok {
		keyNode = mk.Value
	}
	k, err := c.convert(keyNode)
	if err != nil {
		return nil, nil, err
	}
	v, err := c.convert(mv.Value)
	if err != nil {
		return nil, nil, err
	}
	return k, v, nil
}

func (c *converter) leaf(n *node) (*node, error) {
	c.sizes[n] = 1
	return n, c.grow(1, n.line)
}

func (c *converter) grow(n, line int) error {
	c.total += n
	if c.total > maxNodes {
		return &posError{line: line, msg: fmt.Sprintf("the file stands for more than %d values (through aliases?): write a smaller experiment", maxNodes)}
	}
	return nil
}

// yamlError turns a parser error into an *Error at its line.
func yamlError(name string, err error) *Error {
	var pe *posError
	if errors.As(err, &pe) {
		return &Error{File: name, Line: pe.line, Msg: pe.msg}
	}
	line, msg := 0, err.Error()
	var ye yaml.Error
	if errors.As(err, &ye) {
		msg = ye.GetMessage()
		if t := ye.GetToken(); t != nil && t.Position != nil {
			line = t.Position.Line
			msg = fmt.Sprintf("%s (column %d)", msg, t.Position.Column)
		}
	}
	msg = strings.TrimSpace(msg)
	if strings.Contains(msg, "already defined") {
		// The parser's own check of duplicate keys.
		return &Error{File: name, Line: line, Msg: msg + ": keep one of them"}
	}
	return &Error{File: name, Line: line, Msg: "not valid YAML: " + msg + ": check the indentation, and quote values that contain \": \" or start with a special character"}
}

// kindName names a node's kind for messages.
func kindName(n *node) string {
	switch n.kind {
	case mappingNode:
		return "mapping"
	case sequenceNode:
		return "list"
	}
	if n.null {
		return "empty value"
	}
	return "single value"
}

func isScalar(n *node) bool { return n.kind == scalarNode && !n.null }
