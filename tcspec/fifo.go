package tcspec

import (
	"fmt"

	"wanlab/qdisc"
)

// parseFifo follows fifo_parse_opt, shared by pfifo, bfifo and
// pfifo_head_drop: only "limit" (the whole word), read by get_size.
func parseFifo(a *args, _ Options) (qdisc.Spec, error) {
	c := qdisc.FifoConfig{Variant: a.kind}
	unit := "packets"
	if a.kind == "bfifo" {
		unit = "bytes"
	}
	for a.more() {
		w := a.take()
		if w != "limit" {
			return nil, a.unknown(w, "limit N ("+unit+")")
		}
		v, err := a.value(w, "N")
		if err != nil {
			return nil, err
		}
		n, err := getSize(v)
		if err != nil {
			return nil, a.bad(w, v, err)
		}
		if n == 0 {
			return nil, a.fail(v, "%q drops every packet, and wanlab reads a zero limit as the default (the device's txqueuelen): give a limit of at least 1, or none for the default", w+" "+v)
		}
		c.Limit = int(n)
	}
	return c, nil
}

// parsePfifoFast accepts pfifo_fast, which tc gives no options.
func parsePfifoFast(a *args, _ Options) (qdisc.Spec, error) {
	if a.more() {
		w := a.take()
		return nil, a.fail(w, "%q: tc's pfifo_fast takes no options (\"qdisc 'pfifo_fast' does not support option parsing\"); its three bands of txqueuelen packets are fixed", w)
	}
	return qdisc.PfifoFastConfig{}, nil
}

func formatFifo(c qdisc.FifoConfig) string {
	if c.Limit == 0 {
		return c.Kind()
	}
	if c.Kind() == "bfifo" {
		return "bfifo limit " + formatSize(c.Limit)
	}
	return fmt.Sprintf("%s limit %d", c.Kind(), c.Limit)
}
