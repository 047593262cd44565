package plot

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"testing"
)

// minGreyStep is the least difference in luma, on a scale from black (0)
// to white (1), between any two colours of the palette: about what the
// eye tells apart between two lines printed in grey side by side.
const minGreyStep = 0.1

// maxLineLuma is the lightest a line's colour may be in grey and still
// stand out from the white background.
const maxLineLuma = 0.66

// luma709 and luma601 are the grey a colour turns into: the weighted sum of
// its gamma-encoded components with the weights of Rec. 709 (sRGB's
// primaries) and of Rec. 601 (what many greyscale conversions and printer
// drivers, and Go's color.GrayModel, use).
func luma709(c color.RGBA) float64 {
	return (0.2126*float64(c.R) + 0.7152*float64(c.G) + 0.0722*float64(c.B)) / 255
}

func luma601(c color.RGBA) float64 {
	return (0.299*float64(c.R) + 0.587*float64(c.G) + 0.114*float64(c.B)) / 255
}

func TestPaletteSurvivesGreyscale(t *testing.T) {
	for i, a := range palette {
		for _, y := range []float64{luma709(a), luma601(a)} {
			if y > maxLineLuma {
				t.Errorf("palette[%d] %v: luma %.3f is too light against white (max %.2f)", i, a, y, maxLineLuma)
			}
		}
		for j := i + 1; j < len(palette); j++ {
			b := palette[j]
			if d := math.Abs(luma709(a) - luma709(b)); d < minGreyStep {
				t.Errorf("palette[%d] %v and [%d] %v: Rec. 709 luma differs by %.3f < %.2f", i, a, j, b, d, minGreyStep)
			}
			if d := math.Abs(luma601(a) - luma601(b)); d < minGreyStep {
				t.Errorf("palette[%d] %v and [%d] %v: Rec. 601 luma differs by %.3f < %.2f", i, a, j, b, d, minGreyStep)
			}
			// Go's own conversion to grey, as a printer driver would do it.
			ga, gb := color.GrayModel.Convert(a).(color.Gray), color.GrayModel.Convert(b).(color.Gray)
			if d := math.Abs(float64(ga.Y) - float64(gb.Y)); d < minGreyStep*255 {
				t.Errorf("palette[%d] and [%d]: color.GrayModel gives %d and %d", i, j, ga.Y, gb.Y)
			}
		}
	}
}

func TestDashPatternsDiffer(t *testing.T) {
	th := newTheme(DefaultWidth, DefaultHeight)
	for i := range dashes {
		for j := i + 1; j < len(dashes); j++ {
			if slices.Equal(dashes[i], dashes[j]) {
				t.Errorf("dashes[%d] and [%d] are both %v", i, j, dashes[i])
			}
		}
		if s := th.line(slot{dash: i}, false); len(s.Dashes) != len(dashes[i]) {
			t.Errorf("dash %d: the line style has %d dashes, want %d", i, len(s.Dashes), len(dashes[i]))
		}
	}
	if gcd(len(palette), len(dashes)) != 1 {
		t.Errorf("%d colours and %d dash patterns: their counts must be coprime so that colour and dash repeat together only after %d lines",
			len(palette), len(dashes), len(palette)*len(dashes))
	}
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// distinguishable reports whether two lines can be told apart in grey: by
// the grey of their colours, or else by their dashes.
func distinguishable(a, b slot) bool {
	ca, cb := palette[a.colour%len(palette)], palette[b.colour%len(palette)]
	if math.Abs(luma709(ca)-luma709(cb)) >= minGreyStep && math.Abs(luma601(ca)-luma601(cb)) >= minGreyStep {
		return true
	}
	return a.dash%len(dashes) != b.dash%len(dashes)
}

func TestAssignSlotsKeepsLinesApart(t *testing.T) {
	type config struct{ groups, members int }
	var configs []config
	for g := 1; g <= 30; g++ {
		configs = append(configs, config{g, 1}) // one line per run
	}
	for m := 1; m <= 30; m++ {
		configs = append(configs, config{1, m}) // one run, many series
	}
	for g := 2; g <= 12; g++ {
		for m := 2; m <= 6; m++ {
			if g*m <= 30 {
				configs = append(configs, config{g, m}) // runs × series, flows × ends
			}
		}
	}
	for _, c := range configs {
		t.Run(fmt.Sprintf("%dx%d", c.groups, c.members), func(t *testing.T) {
			var keys []lineKey
			for g := 0; g < c.groups; g++ {
				for m := 0; m < c.members; m++ {
					keys = append(keys, lineKey{group: 100 + 7*g, member: m}) // group ids need not be small
				}
			}
			slots := assignSlots(keys)
			for i := range slots {
				for j := i + 1; j < len(slots); j++ {
					if !distinguishable(slots[i], slots[j]) {
						t.Errorf("lines %d %v and %d %v look alike in grey", i, slots[i], j, slots[j])
					}
				}
			}
			// With as many lines as colours or fewer, the colours alone
			// tell every line apart.
			if len(keys) <= len(palette) && (c.groups == 1 || c.members == 1) {
				seen := map[int]bool{}
				for _, s := range slots {
					if seen[s.colour] {
						t.Errorf("%d lines share colour %d", len(keys), s.colour)
					}
					seen[s.colour] = true
				}
			}
			// Runs with several series each: a run keeps one colour.
			if c.groups >= 2 && c.members >= 2 && c.groups <= len(palette) && c.members <= len(dashes) {
				for i, k := range keys {
					if slots[i].colour != slots[i-k.member].colour {
						t.Errorf("line %d of group %d has colour %d, the group's first has %d", i, k.group, slots[i].colour, slots[i-k.member].colour)
					}
				}
			}
		})
	}
}

func TestLineStylesScaleWithTheImage(t *testing.T) {
	big, small := newTheme(DefaultWidth, DefaultHeight), newTheme(DefaultWidth/2, DefaultHeight/2)
	b, s := big.line(slot{dash: 1}, false), small.line(slot{dash: 1}, false)
	if s.Width*2 != b.Width || s.Dashes[0]*2 != b.Dashes[0] {
		t.Errorf("half-size image: width %v dash %v; full size: width %v dash %v", s.Width, s.Dashes, b.Width, b.Dashes)
	}
	if agg := big.line(slot{}, true); agg.Width <= b.Width {
		t.Errorf("an aggregate line is %v wide, not wider than a series' %v", agg.Width, b.Width)
	}
}
