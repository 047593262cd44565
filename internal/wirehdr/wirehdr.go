// Package wirehdr is the header every packet of wanlab's own transports
// starts with (TFRC's, package tfrc, and the scalable sender's, package
// scalable): two magic bytes, a version and a packet type. Each protocol
// keeps its own magic, version, types and errors, and the layout of what
// follows; this package writes and checks the header the one way both
// do. It is part of the pure core, and allocates nothing, so that a
// receive loop can reject stray datagrams on its hot path.
package wirehdr

// Len is the header's length in bytes.
const Len = 4

// Format is one protocol's header and the errors its decoders return.
type Format struct {
	Magic   [2]byte
	Version byte
	// ErrShort, ErrMagic, ErrVersion and ErrType are what Type and Check
	// return for a packet too short, with another magic, of another
	// version, or of another type than the one asked for.
	ErrShort, ErrMagic, ErrVersion, ErrType error
}

// Put writes the header of a packet of type t into b[:Len].
func (f *Format) Put(b []byte, t uint8) {
	b[0], b[1], b[2], b[3] = f.Magic[0], f.Magic[1], f.Version, t
}

// Type returns the type of packet b, or an error if b is not a packet of
// this format and version.
func (f *Format) Type(b []byte) (uint8, error) {
	if len(b) < Len {
		return 0, f.ErrShort
	}
	if b[0] != f.Magic[0] || b[1] != f.Magic[1] {
		return 0, f.ErrMagic
	}
	if b[2] != f.Version {
		return 0, f.ErrVersion
	}
	return b[3], nil
}

// Check returns nil if b is a packet of type t at least n bytes long;
// otherwise Type's error, or ErrType, or ErrShort, in that order.
func (f *Format) Check(b []byte, t uint8, n int) error {
	got, err := f.Type(b)
	if err != nil {
		return err
	}
	if got != t {
		return f.ErrType
	}
	if len(b) < n {
		return f.ErrShort
	}
	return nil
}
