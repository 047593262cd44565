package tcspec

import (
	"fmt"

	"wanlab/qdisc"
)

const pieTakes = "limit PACKETS, target TIME, tupdate TIME, alpha 1-32, beta 1-32, ecn | noecn, bytemode | nobytemode, dq_rate_estimator | no_dq_rate_estimator"

// pieMax is tc's ALPHA_MAX and BETA_MAX.
const pieMax = 32

// parsePIE follows pie_parse_opt (whole words only). tc sends no option
// whose value is 0, leaving the kernel's default; tcspec refuses a 0 rather
// than silently meaning the default. The defaults of options left out are
// filled in.
func parsePIE(a *args, _ Options) (qdisc.Spec, error) {
	var c qdisc.PIEConfig
	for a.more() {
		w := a.take()
		var err error
		switch w {
		case "limit":
			c.Limit, err = count(a, w, fmt.Sprint(qdisc.DefaultPIELimit))
		case "target":
			c.Target, err = duration(a, w, formatDuration(qdisc.DefaultPIETarget))
		case "tupdate":
			c.TUpdate, err = duration(a, w, formatDuration(qdisc.DefaultPIETUpdate))
		case "alpha":
			c.Alpha, err = pieWeight(a, w)
		case "beta":
			c.Beta, err = pieWeight(a, w)
		case "ecn":
			c.ECN = true
		case "noecn":
			c.ECN = false
		case "bytemode":
			c.Bytemode = true
		case "nobytemode":
			c.Bytemode = false
		case "dq_rate_estimator":
			c.DQRateEstimator = true
		case "no_dq_rate_estimator":
			c.DQRateEstimator = false
		default:
			err = a.unknown(w, pieTakes)
		}
		if err != nil {
			return nil, err
		}
	}
	return c.WithDefaults(), nil
}

func pieWeight(a *args, w string) (int, error) {
	dflt := fmt.Sprint(qdisc.DefaultPIEAlpha)
	if w == "beta" {
		dflt = fmt.Sprint(qdisc.DefaultPIEBeta)
	}
	n, err := count(a, w, dflt)
	if err == nil && n > pieMax {
		err = a.fail(a.words[a.i-1], "%q: %s is in units of 1/16 and tc allows up to %d", w+" "+a.words[a.i-1], w, pieMax)
	}
	return n, err
}

func formatPIE(c qdisc.PIEConfig) string {
	var b words
	b.add("pie")
	b.count("limit", c.Limit)
	b.time("target", c.Target)
	b.time("tupdate", c.TUpdate)
	b.count("alpha", c.Alpha)
	b.count("beta", c.Beta)
	b.flag("ecn", c.ECN)
	b.flag("bytemode", c.Bytemode)
	b.flag("dq_rate_estimator", c.DQRateEstimator)
	return b.String()
}
