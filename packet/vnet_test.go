package packet

import (
	"bytes"
	"errors"
	"testing"
)

func TestDecodeVirtioNetHdr(t *testing.T) {
	// NEEDS_CSUM, TCPV4|ECN, hdr_len 66, gso_size 1448, csum_start 20,
	// csum_offset 16, little-endian, then the start of the packet.
	b := []byte{0x01, 0x81, 0x42, 0x00, 0xa8, 0x05, 0x14, 0x00, 0x10, 0x00, 0x45}
	h, err := DecodeVirtioNetHdr(b)
	if err != nil {
		t.Fatal(err)
	}
	want := VirtioNetHdr{Flags: VirtioNetHdrNeedsCsum, GSOType: GSOTCPv4 | GSOECN, HdrLen: 66, GSOSize: 1448, CsumStart: 20, CsumOffset: 16}
	if h != want {
		t.Errorf("decoded %+v, want %+v", h, want)
	}
	enc := make([]byte, VirtioNetHdrLen)
	h.Encode(enc)
	if !bytes.Equal(enc, b[:VirtioNetHdrLen]) {
		t.Errorf("encoded % x, want % x", enc, b[:VirtioNetHdrLen])
	}
	if _, err := DecodeVirtioNetHdr(b[:9]); !errors.Is(err, ErrVirtioNetHdrShort) {
		t.Errorf("9 bytes: %v, want ErrVirtioNetHdrShort", err)
	}
}

func TestVirtioNetHdrEncodeShortPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Encode into 9 bytes did not panic")
		}
	}()
	VirtioNetHdr{}.Encode(make([]byte, 9))
}

func FuzzVirtioNetHdr(f *testing.F) {
	f.Add([]byte{0x01, 0x81, 0x42, 0x00, 0xa8, 0x05, 0x14, 0x00, 0x10, 0x00})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := DecodeVirtioNetHdr(b)
		if len(b) < VirtioNetHdrLen {
			if err == nil {
				t.Fatalf("decoded %d bytes without error", len(b))
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		enc := make([]byte, VirtioNetHdrLen)
		h.Encode(enc)
		if !bytes.Equal(enc, b[:VirtioNetHdrLen]) {
			t.Fatalf("bytes % x decode to %+v, which encodes to % x", b[:VirtioNetHdrLen], h, enc)
		}
		h2, err := DecodeVirtioNetHdr(enc)
		if err != nil || h2 != h {
			t.Fatalf("%+v encodes and decodes to %+v, %v", h, h2, err)
		}
	})
}
