package tcspec

import (
	"fmt"
	"slices"
	"strings"

	"wanlab/qdisc"
)

// This file reads scripts of tc lines: "tc qdisc|class|filter
// add|replace|change|del dev DEV ..." as a shaping script, a router's
// start script or a pasted setup has them, into commands that tree.go
// applies to a device's tree as the kernel would.

// ScriptOptions carries what reading a script needs.
type ScriptOptions struct {
	Options
	// Vars are the variables the script's $NAME and ${NAME} read, as its
	// environment (wanlab's --set NAME=VALUE, an experiment's variables);
	// the script's own assignments add to them.
	Vars map[string]string
}

// Script is a script of tc lines, read: its commands in order, each with
// the line it came from. Reading it checks each command as tc would
// (options, handles, what wanlab cannot do); applying it (Steps, Chain)
// checks what the kernel would refuse of the device's state.
type Script struct {
	cmds []*tcCmd
}

// ScriptError is a refused command of a script: where it is, what it
// says, and why, with the fix.
type ScriptError struct {
	// Line is the line the command starts on, from 1; Command its place
	// among the commands of that line, from 1, when there are several
	// (0 when it is the line's only one).
	Line, Command int
	// Text is the command, its variables expanded ("" for a problem of
	// the line itself, such as a quote left open).
	Text string
	// Msg says what is wrong and what to write instead.
	Msg string
}

// Error returns "line N: MSG", naming the command after the line.
func (e *ScriptError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "line %d", e.Line)
	if e.Command > 0 {
		fmt.Fprintf(&b, ", command %d", e.Command)
	}
	if e.Text != "" {
		b.WriteString(" (" + Quote(e.Text) + ")")
	}
	b.WriteString(": " + e.Msg)
	return b.String()
}

// tcCmd is one tc command of a script.
type tcCmd struct {
	shellCmd
	object string // "qdisc", "class" or "filter"
	verb   string // "add", "change", "replace" or "delete"
	dev    string
	root   bool          // "root"
	parent qdisc.ClassID // "parent", when given (hasParent)
	// hasParent says parent was given.
	hasParent bool
	handle    uint16        // a qdisc's "handle" (0: none)
	classid   qdisc.ClassID // a class's "classid" (0: none)
	kind      string        // the qdisc, class or filter kind ("" for none: a del)
	spec      qdisc.Spec    // a qdisc's options
	class     qdisc.HTBClass
	filter    qdisc.Filter
	// fhandle is a filter's "handle", which wanlab's u32 refuses.
	fhandle string
	prio    uint16 // a filter's prio (0: none, tc allocates one)
	// proto is a filter's protocol, when given (hasProto); tc's default
	// for a new filter is all.
	proto    qdisc.FilterProtocol
	hasProto bool
	nlines   int // the commands on the command's line
}

// fail returns a *ScriptError about c.
func (c *tcCmd) fail(format string, args ...any) *ScriptError {
	return c.shellCmd.errorf(c.nlines, format, args...)
}

func (c *shellCmd) errorf(nlines int, format string, args ...any) *ScriptError {
	e := &ScriptError{Line: c.line, Text: c.text(), Msg: shortenQuotes(fmt.Sprintf(format, args...))}
	if nlines > 1 {
		e.Command = c.nth
	}
	return e
}

// ParseScript reads a script of tc lines: comments, blank lines, lines
// continued by a backslash, several commands on a line separated by ";",
// variables ($NAME, ${NAME}, ${NAME:-DEFAULT}, NAME=VALUE, export) and
// 2>/dev/null or "|| true" on a command that may fail (which then
// changes nothing where the kernel would refuse it, as the script would
// go on). Every command is a tc qdisc, class or filter command (add,
// change, replace, del; show lines are skipped), on any device: Dev picks
// one device's. Errors are *ScriptError, naming the line and the fix.
func ParseScript(text string, opt ScriptOptions) (*Script, error) {
	shell, err := lexScript(text, opt.Vars)
	if err != nil {
		if le, ok := err.(*lineError); ok {
			return nil, &ScriptError{Line: le.line, Msg: le.msg}
		}
		return nil, err
	}
	perLine := map[int]int{}
	for _, c := range shell {
		perLine[c.line]++
	}
	s := &Script{}
	for _, c := range shell {
		cmd, err := parseTC(c, perLine[c.line], opt.Options)
		if err != nil {
			return nil, err
		}
		if cmd != nil {
			s.cmds = append(s.cmds, cmd)
		}
	}
	return s, nil
}

// Devices returns the devices the script configures, in the order it
// first names them.
func (s *Script) Devices() []string {
	var devs []string
	for _, c := range s.cmds {
		if !slices.Contains(devs, c.dev) {
			devs = append(devs, c.dev)
		}
	}
	return devs
}

// Dev returns the script's commands on device dev, in order.
func (s *Script) Dev(dev string) *Script {
	out := &Script{}
	for _, c := range s.cmds {
		if c.dev == dev {
			out.cmds = append(out.cmds, c)
		}
	}
	return out
}

// String writes the script's commands back as a script, each on the
// line it came from (so that ParseScript of it names the same lines),
// with its variables expanded and its words quoted where the shell needs
// it; a silenced command ends in 2>/dev/null.
func (s *Script) String() string {
	var b strings.Builder
	line := 1
	for i, c := range s.cmds {
		for line < c.line {
			b.WriteByte('\n')
			line++
		}
		if i > 0 && s.cmds[i-1].line == c.line {
			b.WriteString("; ")
		}
		for j, w := range c.words {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(shellQuote(w))
		}
		if c.quiet {
			b.WriteString(" 2>/dev/null")
		}
	}
	if len(s.cmds) > 0 {
		b.WriteByte('\n')
	}
	return b.String()
}

// shellQuote quotes w for the shell where it needs quoting.
func shellQuote(w string) string {
	if w != "" && !strings.ContainsAny(w, " \t'\"\\$`#;&|<>()*?[]{}~!") {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// Len returns the number of commands.
func (s *Script) Len() int { return len(s.cmds) }

// Lines returns each command as tc's arguments (after "tc"), with its
// device renamed dev, in order, and whether the script silences its
// errors: what running the script on another device would run.
func (s *Script) Lines(dev string) (args [][]string, quiet []bool) {
	for _, c := range s.cmds {
		w := slices.Clone(c.words)
		// From "tc" on, and with the device renamed.
		i := slices.IndexFunc(w, func(x string) bool { return x == "tc" || strings.HasSuffix(x, "/tc") })
		w = w[i+1:]
		for j := 0; j+1 < len(w); j++ {
			if w[j] == "dev" {
				w[j+1] = dev
			}
		}
		args = append(args, w)
		quiet = append(quiet, c.quiet)
	}
	return args, quiet
}

// Device returns the one device a script for one direction configures,
// or a *ScriptError at the first line that names a second one. A script
// without commands configures none ("").
func (s *Script) Device() (string, error) {
	for _, c := range s.cmds {
		if c.dev != s.cmds[0].dev {
			return "", c.fail("this script is for one direction, and configures dev %s (line %d) and dev %s: give a script per direction, or one for both with --script FILE --up-dev %s --down-dev %s", s.cmds[0].dev, s.cmds[0].line, c.dev, s.cmds[0].dev, c.dev)
		}
	}
	if len(s.cmds) == 0 {
		return "", nil
	}
	return s.cmds[0].dev, nil
}

// parseTC reads one command: nil for one that changes nothing (show,
// list).
func parseTC(c shellCmd, nlines int, opt Options) (*tcCmd, error) {
	cmd := &tcCmd{shellCmd: c, nlines: nlines}
	w := c.words
	if w[0] == "sudo" {
		w = w[1:]
		for len(w) > 0 && strings.HasPrefix(w[0], "-") {
			w = w[1:]
		}
	}
	if len(w) == 0 || w[0] != "tc" && !strings.HasSuffix(w[0], "/tc") {
		return nil, cmd.fail("only tc commands configure the path: write tc qdisc, tc class or tc filter")
	}
	w = w[1:]
	for len(w) > 0 && strings.HasPrefix(w[0], "-") && len(w[0]) > 1 {
		o := w[0]
		switch {
		case matches(o, "-batch"):
			return nil, cmd.fail("tc %s reads its commands from a file: put the commands in the script itself", o)
		case matches(o, "-netns") || o == "-n":
			return nil, cmd.fail("tc %s runs in another namespace; wanlab shapes its own path: drop it and name the device", o)
		case (o == "-cf" || matches(o, "-conf")) && len(w) > 1:
			w = w[1:] // the option's argument
		}
		w = w[1:]
	}
	if len(w) == 0 {
		return nil, cmd.fail("tc without an object: write tc qdisc, tc class or tc filter")
	}
	switch o := w[0]; {
	case matches(o, "qdisc"):
		cmd.object = "qdisc"
	case matches(o, "class"):
		cmd.object = "class"
	case matches(o, "filter"):
		cmd.object = "filter"
	default:
		return nil, cmd.fail("tc %s: wanlab reads tc qdisc, tc class and tc filter commands", o)
	}
	w = w[1:]
	if len(w) == 0 {
		return nil, cmd.fail("tc %s without a command: write add, change, replace or del", cmd.object)
	}
	switch v := w[0]; {
	case matches(v, "add"):
		cmd.verb = "add"
	case matches(v, "change"):
		cmd.verb = "change"
	case matches(v, "replace"):
		cmd.verb = "replace"
	case cmd.object == "qdisc" && matches(v, "link"):
		return nil, cmd.fail("tc qdisc link: wanlab reads add, change, replace and del; write tc qdisc replace")
	case matches(v, "delete"):
		cmd.verb = "delete"
	case matches(v, "list"), matches(v, "show"), matches(v, "lst"), cmd.object == "filter" && matches(v, "get"):
		return nil, nil // reads only
	default:
		return nil, cmd.fail("tc %s %s: unknown command: write add, change, replace or del", cmd.object, v)
	}
	a := &args{words: w[1:]}
	var err error
	switch cmd.object {
	case "qdisc":
		err = cmd.qdiscArgs(a, opt)
	case "class":
		err = cmd.classArgs(a, opt)
	default:
		err = cmd.filterArgs(a)
	}
	if err != nil {
		if te, ok := err.(*Error); ok {
			msg := te.Msg
			if te.Kind != "" {
				msg = te.Kind + ": " + msg
			}
			return nil, cmd.fail("%s", msg)
		}
		return nil, err
	}
	if cmd.dev == "" {
		return nil, cmd.fail("no device: tc needs \"dev DEV\" (any name: the script's device is the direction's)")
	}
	return cmd, nil
}

// common reads the words every object takes before its kind: dev,
// parent and root (each once); it reports whether it took w.
func (cmd *tcCmd) common(a *args, w string) (bool, error) {
	switch {
	case w == "dev":
		return true, once(a, w, "DEV", "dev", &cmd.dev, false, func(v string) (string, error) { return v, nil })
	case w == "root":
		if cmd.root || cmd.hasParent {
			return true, a.fail(w, "\"root\" is a duplicate parent ID (tc says so): give root or parent once")
		}
		cmd.root = true
	case w == "parent":
		v, err := a.value(w, "MAJ:MIN")
		if err != nil {
			return true, err
		}
		if cmd.root || cmd.hasParent {
			return true, a.fail(w, "\"parent\" is a duplicate parent ID (tc says so): give root or parent once")
		}
		if v == "root" {
			cmd.root = true
			return true, nil
		}
		id, err := ParseClassID(v)
		if err != nil {
			return true, a.bad(w, v, err)
		}
		cmd.parent, cmd.hasParent = id, true
	case matches(w, "estimator"):
		if _, err := a.value(w, "INTERVAL TIME-CONSTANT"); err != nil {
			return true, err
		}
		if _, err := a.value(w, "INTERVAL TIME-CONSTANT"); err != nil {
			return true, err
		}
	case w == "ingress" || w == "clsact" || w == "egress" || matches(w, "ingress_block") || matches(w, "egress_block") || matches(w, "block"):
		return true, a.fail(w, "%q: wanlab shapes what leaves the device (egress), with no ingress qdisc or shared blocks: configure the other direction's device instead", w)
	case matches(w, "help"):
		return true, a.fail(w, "tc %s help: wanlab reads commands, not help requests; drop it", cmd.object)
	default:
		return false, nil
	}
	return true, nil
}

// each reads a command's words: those every object takes (common), then
// own's.
func (cmd *tcCmd) each(a *args, own func(w string) error) error {
	for a.more() {
		w := a.take()
		took, err := cmd.common(a, w)
		if err == nil && !took {
			err = own(w)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// qdiscArgs reads "tc qdisc VERB" 's words, as tc_qdisc_modify.
func (cmd *tcCmd) qdiscArgs(a *args, opt Options) error {
	err := cmd.each(a, func(w string) error {
		switch {
		case w == "handle":
			return once(a, w, "MAJ:", "handle", &cmd.handle, false, parseHandle)
		case matches(w, "stab"):
			return a.fail(w, "size tables (stab) are not supported by wanlab; use the class's or tbf's overhead, mpu and linklayer")
		}
		k, ok := lookup(w)
		if !ok {
			return unknownKind(w)
		}
		cmd.kind = w
		spec, err := k.parse(&args{kind: w, words: a.words[a.i:]}, opt)
		cmd.spec, a.i = spec, len(a.words)
		return err
	})
	if err != nil {
		return err
	}
	if cmd.verb != "delete" && cmd.kind == "" {
		return a.fail("", "no qdisc kind: write e.g. \"tc qdisc add dev eth0 root handle 1: htb default 20\"")
	}
	return nil
}

// classArgs reads "tc class VERB" 's words, as tc_class_modify and, for
// htb, htb_parse_class_opt.
func (cmd *tcCmd) classArgs(a *args, opt Options) error {
	err := cmd.each(a, func(w string) error {
		switch {
		case w == "classid":
			return once(a, w, "MAJ:MIN", "classid", &cmd.classid, false, ParseClassID)
		case w == "handle":
			return a.fail(w, "a class has no handle (tc says: try \"classid\" instead of \"handle\"): write classid MAJ:MIN")
		case w == "htb":
			cmd.kind = w
			ca := &args{kind: "htb class", words: a.words[a.i:]}
			a.i = len(a.words)
			if cmd.verb == "delete" {
				return nil
			}
			c, err := parseHTBClass(ca, opt)
			cmd.class = c
			return err
		}
		if _, ok := lookup(w); ok {
			return a.fail(w, "%s's classes take no options of their own (only htb's do): configure the qdisc under a class with tc qdisc ... parent MAJ:MIN", w)
		}
		return a.fail(w, "%q: wanlab's classes are htb's: write htb rate RATE [ceil RATE] ...", w)
	})
	if err != nil {
		return err
	}
	if cmd.verb != "delete" && cmd.kind == "" {
		return a.fail("", "no class kind: write e.g. \"tc class add dev eth0 parent 1: classid 1:1 htb rate 10mbit\"")
	}
	if cmd.classid == 0 && cmd.verb != "add" {
		return a.fail("", "which class? give classid MAJ:MIN")
	}
	return nil
}

// classifiers are tc's other filter kinds, which wanlab refuses.
var classifiers = []string{"basic", "bpf", "cgroup", "flow", "flower", "fw", "matchall", "route", "rsvp", "rsvp6", "tcindex"}

// filterArgs reads "tc filter VERB" 's words, as tc_filter_modify and,
// for u32, u32_parse_opt.
func (cmd *tcCmd) filterArgs(a *args) error {
	err := cmd.each(a, func(w string) error {
		switch {
		case w == "handle":
			v, err := a.value(w, "HANDLE")
			cmd.fhandle = v
			return err
		case matches(w, "preference") || matches(w, "priority"):
			return once(a, w, "N", "priority", &cmd.prio, false, func(v string) (uint16, error) {
				n, err := getUint(v, 0, 0xffff)
				return uint16(n), err
			})
		case matches(w, "protocol"):
			v, err := a.value(w, "ip|ipv6|all")
			if err != nil {
				return err
			}
			p, ok := protocolNames[v]
			switch {
			case !ok:
				return a.fail(v, "%q: wanlab's router forwards IP packets only: give protocol ip, ipv6 or all", w+" "+v)
			case cmd.hasProto:
				return a.dup("protocol")
			}
			cmd.proto, cmd.hasProto = p, true
			return nil
		case matches(w, "chain"):
			v, err := a.value(w, "N")
			if err == nil && v != "0" {
				err = a.fail(v, "%q: wanlab runs one chain of filters per attachment point, chain 0: drop it", w+" "+v)
			}
			return err
		case w == "u32":
			cmd.kind = w
			if cmd.fhandle != "" {
				return a.fail(cmd.fhandle, "%q: u32 handles name its hash tables and nodes, which wanlab's u32 has not: drop the handle (delete a filter by its prio)", "handle "+cmd.fhandle)
			}
			ua := &args{kind: "u32", words: a.words[a.i:]}
			a.i = len(a.words)
			cmd.filter.Parent, cmd.filter.Prio = cmd.parent, cmd.prio
			return parseU32(ua, &cmd.filter)
		case slices.Contains(classifiers, w):
			return a.fail(w, "filter %q: wanlab classifies with u32 only (this kernel has u32 and bpf): write the match with u32, e.g. u32 match ip dsfield 0x28 0xfc flowid 1:10", w)
		}
		return a.fail(w, "%q: not a filter option or classifier: write e.g. tc filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dsfield 0x28 0xfc flowid 1:10", w)
	})
	if err != nil {
		return err
	}
	switch {
	case cmd.verb != "delete" && cmd.kind == "":
		return a.fail("", "no classifier: write u32 and its matches, e.g. u32 match ip dsfield 0x28 0xfc flowid 1:10")
	case cmd.verb == "delete" && cmd.fhandle != "":
		return a.fail(cmd.fhandle, "%q: u32 handles name its hash tables and nodes, which wanlab's u32 has not: delete the filters of a prio (tc filter del dev DEV parent MAJ: prio N)", "handle "+cmd.fhandle)
	case cmd.verb == "change":
		return a.fail("", "tc filter change changes the u32 node its handle names, which wanlab's u32 has not: delete the filter's prio and add it again")
	case cmd.verb != "delete" && cmd.filter.ClassID == 0:
		return a.fail("", "no flowid: give flowid MAJ:MIN, the class the matching packets go to")
	}
	return nil
}

// CheckDevices returns a *ScriptError at the first command on a device
// other than devs, naming them: a script for both directions configures
// their devices and no other.
func (s *Script) CheckDevices(devs ...string) error {
	for _, c := range s.cmds {
		if !slices.Contains(devs, c.dev) {
			return c.fail("dev %s is not one of the path's devices (%s): give it with --up-dev or --down-dev, or drop the line", c.dev, strings.Join(devs, ", "))
		}
	}
	return nil
}
