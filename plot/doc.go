// Package plot draws wanlab's graphs from results documents (package
// results), as PNG or SVG: the views Flent users know (all_scaled, the
// latency CDF, box plots across runs or across an experiment's cases), a
// statistic against a swept variable with a group per value of another
// (an experiment's table, package experiment), TCP's congestion window and
// RTT at both ends of each flow, and the router's per-flow delivered rate
// and queueing delay. It reads only *results.Document values and
// experiment tables, so every graph can be drawn again from saved files.
//
// Draw renders one Kind of graph from one or more documents; FromTable
// makes a Sweep of an experiment's table and DrawSweep renders it. Both
// write the whole image to an io.Writer only after it has been built, so a
// graph that cannot be drawn (a document without the series it needs)
// returns an error naming what is missing and writes nothing. A graph
// never draws different quantities on one axis as if they were one (a
// per-flow average over four flows beside a single flow): it refuses
// them, saying what to choose.
//
// Readability rules every graph follows: axes are labelled with their units,
// once; a numeric variable is drawn on a numeric axis, in proportion, and a
// categorical one as groups side by side, never joined by a line; error
// bars never reach below what the quantity can be (a rate, a time, a size
// below zero), and the graph says where it cut them; legends sit to the
// right of the data area, never over it, their labels wrapped at spaces,
// never cut through a word that fits; and lines are told apart by colour
// and dash pattern together, with six colours whose luma differs pairwise
// by at least a tenth of the black-to-white range under both the Rec. 709
// and Rec. 601 weightings, so that the lines stay apart when printed in
// grey.
//
// The graphs are drawn with gonum.org/v1/plot: it is well kept (part of the
// Gonum project, with regular releases), pure Go with no cgo, and has PNG
// and SVG backends, so the graphs build and render the same on every machine
// wanlab runs on, without Python, matplotlib or a C graphics library.
package plot
