package lab

import (
	"fmt"
	"strings"

	"wanlab/link"
	"wanlab/qdisc"
	"wanlab/tcspec"
)

// HostSpecs are the hosts of a testbed as a command line or an experiment
// file gives them: counts (0 is 1), access links as HOST=CHAIN in tc's
// syntax (link.ParseAccess) and congestion controls as HOST=CC. Parse
// turns them into Options' fields.
type HostSpecs struct {
	Clients, Servers int
	AccessUp         []string
	AccessDown       []string
	HostCC           []string
}

// HostLabels name the settings of HostSpecs in errors, as the user gave
// them: the flags ("--clients") or an experiment file's keys ("clients").
type HostLabels struct {
	Clients, Servers, AccessUp, AccessDown, HostCC string
}

// HostSpecError is an error of HostSpecs.Parse: Label names the setting
// at fault (one of HostLabels').
type HostSpecError struct {
	Label string
	Err   error
}

func (e *HostSpecError) Error() string { return e.Err.Error() }
func (e *HostSpecError) Unwrap() error { return e.Err }

// Parse checks s and sets o's Clients, Servers, Access and HostCC; tc
// reads the chains with opts on env's device. Its errors, each a
// *HostSpecError, name the setting at fault by l and say what to change;
// a host that the counts do not give is refused naming the counts
// (link.ErrNoHost).
func (s HostSpecs) Parse(o *Options, l HostLabels, opts tcspec.Options, env *qdisc.Env) error {
	err := s.parse(o, l, opts, env)
	if err != nil {
		// Every message of parse starts with its label.
		label, _, _ := strings.Cut(err.Error(), " ")
		err = &HostSpecError{Label: label, Err: err}
	}
	return err
}

func (s HostSpecs) parse(o *Options, l HostLabels, opts tcspec.Options, env *qdisc.Env) error {
	for _, n := range []struct {
		label string
		n     int
	}{{l.Clients, s.Clients}, {l.Servers, s.Servers}} {
		if n.n < 0 || n.n > link.MaxHosts {
			return fmt.Errorf("%s %d: give 1 to %d hosts", n.label, n.n, link.MaxHosts)
		}
	}
	nc, ns := max(s.Clients, 1), max(s.Servers, 1)
	hint := func(err error) string {
		return fmt.Sprintf("%v (%s %d %s %d)", err, l.Clients, nc, l.Servers, ns)
	}
	o.Clients, o.Servers = s.Clients, s.Servers
	o.Access = nil
	seen := map[string]string{}
	for _, d := range []struct {
		dir, label string
		specs      []string
	}{{"up", l.AccessUp, s.AccessUp}, {"down", l.AccessDown, s.AccessDown}} {
		for _, spec := range d.specs {
			h, text, err := link.ParseAccess(spec)
			if err != nil {
				return fmt.Errorf("%s %q: %v", d.label, spec, err)
			}
			if err := h.Check(nc, ns); err != nil {
				return fmt.Errorf("%s %q: %s", d.label, spec, hint(err))
			}
			if prev, ok := seen[h.LinkName(d.dir)]; ok {
				return fmt.Errorf("%s gives %s an access link twice (%q and %q): keep one", d.label, h, prev, spec)
			}
			seen[h.LinkName(d.dir)] = spec
			chain, err := tcspec.ParseChain(text, opts)
			if err == nil {
				err = qdisc.CheckChain(nil, chain, env)
			}
			if err == nil {
				err = CheckChain(chain)
			}
			if err != nil {
				return fmt.Errorf("%s %q: %v", d.label, spec, err)
			}
			o.Access = append(o.Access, Access{Host: h, Dir: d.dir, Chain: chain})
		}
	}
	o.HostCC = nil
	for _, spec := range s.HostCC {
		h, cc, err := ParseHostCC(spec)
		if err != nil {
			return fmt.Errorf("%s %q: %v", l.HostCC, spec, err)
		}
		if err := h.Check(nc, ns); err != nil {
			return fmt.Errorf("%s %q: %s", l.HostCC, spec, hint(err))
		}
		if prev, ok := o.HostCC[h]; ok {
			return fmt.Errorf("%s gives %s a congestion control twice (%s and %s): keep one", l.HostCC, h, prev, cc)
		}
		if err := CheckCC(cc); err != nil {
			return fmt.Errorf("%s %q: %v", l.HostCC, spec, err)
		}
		if o.HostCC == nil {
			o.HostCC = map[link.Host]string{}
		}
		o.HostCC[h] = cc
	}
	return nil
}

// ParseHostCC parses a host's congestion control, HOST=CC ("c2=bbr").
func ParseHostCC(s string) (link.Host, string, error) {
	name, cc, ok := strings.Cut(s, "=")
	if !ok {
		return link.Host{}, "", fmt.Errorf("%q is not HOST=CC; write e.g. \"c2=bbr\"", s)
	}
	h, err := link.ParseHost(strings.TrimSpace(name))
	if err != nil {
		return h, "", err
	}
	if cc = strings.TrimSpace(cc); cc == "" {
		return h, "", fmt.Errorf("%q names no congestion control; write e.g. \"%s=bbr\"", s, h)
	}
	if err := checkCCName(cc); err != nil {
		return h, "", err
	}
	return h, cc, nil
}
