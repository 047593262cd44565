// Package bridgeport readies two existing interfaces to be the ports of
// `wanlab bridge IF1 IF2`, and gives them back exactly as they were.
//
// Inspect reads what an interface is now; Check judges two of them as a
// bridge's ports and refuses, with the fix, what cannot be one (the
// loopback, a link type other than Ethernet, a bridge's or bond's port, an
// interface with someone else's clsact filters) and, unless forced, what
// the machine itself uses (its addresses, its default route).
package bridgeport
