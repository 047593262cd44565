package testrun

import (
	"fmt"
	"io"
	"strings"

	"wanlab/internal/infile"
	"wanlab/qdisc"
	"wanlab/tcspec"
)

// maxScript bounds a script file: tc lines for a path are a few
// kilobytes.
const maxScript = 1 << 20

// ReadScriptFile reads a script of tc lines that a user names: a regular
// file of at most 1 MiB. A FIFO (which would hang the command), a device
// or a directory is refused before anything is read, as a file too large
// to be a script is, each with what to give instead.
func ReadScriptFile(path string) ([]byte, error) {
	f, err := infile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%v: give a file of tc lines", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxScript+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxScript {
		return nil, fmt.Errorf("%s: the file is over %d KiB, which no script of tc lines is: is it the right file?", path, maxScript>>10)
	}
	return b, nil
}

// Scripts are the path's scripts of tc lines, read: each direction's
// commands (nil for a direction no script gives), where they came from,
// for messages, and the options that gave them.
type Scripts struct {
	Up, Down         *tcspec.Script
	UpFrom, DownFrom string
	UpKey, DownKey   string
}

// Any reports whether a script gives a direction.
func (s Scripts) Any() bool { return s.Up != nil || s.Down != nil }

// ReadScripts reads the scripts o names (--up-script, --down-script,
// --script with --up-dev and --down-dev), their variables from --set, and
// returns each direction's commands. A script and a chain for one
// direction (--up-script with --up or --both), a device without --script
// or --script without one, a script on two devices for one direction and
// a line on a device that is neither --up-dev nor --down-dev are refused;
// every error is a *BadOption naming the option, the file and, for a bad
// line, its number.
func ReadScripts(o *Options, tc tcspec.Options) (Scripts, error) {
	var s Scripts
	if o.Script == "" && (o.UpDev != "" || o.DownDev != "") {
		key := "up_dev"
		if o.UpDev == "" {
			key = "down_dev"
		}
		return s, bad(key, "%s names a device of --script, and no --script is given: give --script FILE, or drop %s", LookupOption(key).Name(), LookupOption(key).Name())
	}
	if o.Script != "" && o.UpDev == "" && o.DownDev == "" {
		return s, bad("script", "--script %s configures devices by name: say which device makes which direction with --up-dev DEV and --down-dev DEV", o.Script)
	}
	if o.Script != "" && o.UpDev == o.DownDev {
		return s, bad("up_dev", "--up-dev and --down-dev are both %s: a direction each needs a device of its own", o.UpDev)
	}
	for _, c := range []struct {
		key, flag, chainFlag string
		chain                bool
	}{
		{"up_script", "--up-script", "--up", o.Up != ""},
		{"up_script", "--up-script", "--both", o.Both != ""},
		{"down_script", "--down-script", "--down", o.Down != ""},
		{"down_script", "--down-script", "--both", o.Both != ""},
	} {
		if c.chain && LookupOption(c.key).field.texts(o)[0] != "" {
			return s, bad(c.key, "%s and %s both give the path of one direction: give one of them", c.flag, c.chainFlag)
		}
	}
	for _, c := range []struct {
		dev, flag, other string
		other2           bool
	}{
		{o.UpDev, "--up-dev", "--up-script", o.UpScript != ""},
		{o.UpDev, "--up-dev", "--up", o.Up != "" || o.Both != ""},
		{o.DownDev, "--down-dev", "--down-script", o.DownScript != ""},
		{o.DownDev, "--down-dev", "--down", o.Down != "" || o.Both != ""},
	} {
		if c.dev != "" && c.other2 {
			return s, bad(strings.ReplaceAll(strings.TrimPrefix(c.flag, "--"), "-", "_"), "--script with %s and %s both give the path of one direction: give one of them", c.flag, c.other)
		}
	}
	vars, err := ScriptVars(o.ScriptVars)
	if err != nil {
		return s, err
	}
	if len(o.ScriptVars) > 0 && o.UpScript == "" && o.DownScript == "" && o.Script == "" {
		return s, bad("set", "--set gives values to the variables of the path's scripts, and none is given: give --up-script, --down-script or --script, or drop --set")
	}
	read := func(key, file string) (*tcspec.Script, error) {
		flag := LookupOption(key).Name()
		b, err := ReadScriptFile(file)
		if err != nil {
			return nil, bad(key, "%s: %v", flag, err)
		}
		sc, err := tcspec.ParseScript(string(b), tcspec.ScriptOptions{Options: tc, Vars: vars})
		if err != nil {
			return nil, bad(key, "%s %s: %v", flag, file, err)
		}
		return sc, nil
	}
	if o.UpScript != "" {
		if s.Up, err = read("up_script", o.UpScript); err != nil {
			return s, err
		}
		if _, err := s.Up.Device(); err != nil {
			return s, bad("up_script", "--up-script %s: %v", o.UpScript, err)
		}
		s.UpFrom, s.UpKey = "--up-script "+o.UpScript, "up_script"
	}
	if o.DownScript != "" {
		if s.Down, err = read("down_script", o.DownScript); err != nil {
			return s, err
		}
		if _, err := s.Down.Device(); err != nil {
			return s, bad("down_script", "--down-script %s: %v", o.DownScript, err)
		}
		s.DownFrom, s.DownKey = "--down-script "+o.DownScript, "down_script"
	}
	if o.Script != "" {
		both, err := read("script", o.Script)
		if err != nil {
			return s, err
		}
		var devs []string
		for _, d := range []string{o.UpDev, o.DownDev} {
			if d != "" {
				devs = append(devs, d)
			}
		}
		if err := both.CheckDevices(devs...); err != nil {
			return s, bad("script", "--script %s: %v", o.Script, err)
		}
		if o.UpDev != "" {
			s.Up, s.UpFrom, s.UpKey = both.Dev(o.UpDev), fmt.Sprintf("--script %s (dev %s)", o.Script, o.UpDev), "script"
		}
		if o.DownDev != "" {
			s.Down, s.DownFrom, s.DownKey = both.Dev(o.DownDev), fmt.Sprintf("--script %s (dev %s)", o.Script, o.DownDev), "script"
		}
	}
	return s, nil
}

// ScriptVars reads --set's NAME=VALUE pairs into the scripts' variables;
// its error is a *BadOption of --set.
func ScriptVars(pairs []string) (map[string]string, error) {
	vars := map[string]string{}
	for _, kv := range pairs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.ContainsAny(k, " \t$={}") {
			return nil, bad("set", "--set %q: give NAME=VALUE, e.g. --set RATE=10mbit", kv)
		}
		if _, dup := vars[k]; dup {
			return nil, bad("set", "--set %s is given twice: give it once", k)
		}
		vars[k] = v
	}
	return vars, nil
}

// Chains applies each direction's script to a device without qdiscs of
// its own, on env's device, and returns the chains they leave (nil for a
// direction no script gives, or one its script leaves without qdiscs).
func (s Scripts) Chains(env *qdisc.Env) (up, down []qdisc.Spec, err error) {
	if s.Up != nil {
		if up, err = s.Up.Chain(env); err != nil {
			return nil, nil, bad(s.UpKey, "%s: %v", s.UpFrom, err)
		}
	}
	if s.Down != nil {
		if down, err = s.Down.Chain(env); err != nil {
			return nil, nil, bad(s.DownKey, "%s: %v", s.DownFrom, err)
		}
	}
	return up, down, nil
}
