// Package plot draws wanlab's graphs from results documents (package
// results), as PNG or SVG: the views Flent users know (all_scaled, the
// latency CDF, box plots across runs), a statistic against a swept
// variable with one line per group, TCP's congestion window and RTT at both
// ends of each flow, and the router's per-flow delivered rate and queueing
// delay. It reads only *results.Document values (and, for sweeps, the
// Sweep type defined here), so every graph can be drawn again from saved
// files.
//
// Draw renders one Kind of graph from one or more documents; DrawSweep
// renders a Sweep. Both write the whole image to an io.Writer only after it
// has been built, so a graph that cannot be drawn (a document without the
// series it needs) returns an error naming what is missing and writes
// nothing.
//
// Readability rules every graph follows: axes are labelled with their units;
// legends sit to the right of the data area, never over it; and lines are
// told apart by colour and dash pattern together, with six colours whose
// luma differs pairwise by at least a tenth of the black-to-white range
// under both the Rec. 709 and Rec. 601 weightings, so that the lines stay
// apart when printed in grey.
//
// The graphs are drawn with gonum.org/v1/plot: it is well kept (part of the
// Gonum project, with regular releases), pure Go with no cgo, and has PNG
// and SVG backends, so the graphs build and render the same on every machine
// wanlab runs on, without Python, matplotlib or a C graphics library.
package plot
