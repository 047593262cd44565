package main

import (
	"strings"
	"testing"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestDocs lints every command's help: a short description that starts with
// a capital and has no final period, an example, and a usage line for each
// flag.
func TestDocs(t *testing.T) {
	root := newRoot(&streams{in: strings.NewReader(""), out: new(strings.Builder), err: new(strings.Builder)})
	if len(root.Commands()) == 0 {
		t.Fatal("no subcommands registered")
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			return
		}
		if c.Short == "" || !unicode.IsUpper(rune(c.Short[0])) || strings.HasSuffix(c.Short, ".") {
			t.Errorf("%s: Short %q should be a capitalised phrase without a final period", c.CommandPath(), c.Short)
		}
		// A command that groups others runs only to refuse an unknown
		// one (refuseUnknownCommands); its subcommands have the examples.
		if c.HasParent() && c.Runnable() && !c.HasSubCommands() && c.Example == "" {
			t.Errorf("%s: no Example", c.CommandPath())
		}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Usage == "" {
				t.Errorf("%s --%s: no usage text", c.CommandPath(), f.Name)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
