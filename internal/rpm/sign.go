package rpm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// Signature tags: a signature of the header alone, and of the header and
// the payload, for RSA keys and for every other algorithm.
const (
	sigDSA = 267  // header only, non-RSA
	sigRSA = 268  // header only, RSA
	sigPGP = 1002 // header and payload, RSA
	sigGPG = 1005 // header and payload, non-RSA
)

// Signer makes binary OpenPGP detached signatures (package sign).
type Signer interface {
	Detached(data []byte) ([]byte, error)
	RSA() bool
}

// Sign returns the package b with OpenPGP signatures in its signature
// header: of the header (what rpm 4.14 and later check first) and of the
// header and payload (what older rpm checks). The lead, the header and the
// payload are unchanged; earlier signatures are replaced. It works on any
// v4 package, ours or rpmbuild's.
func Sign(b []byte, s Signer) ([]byte, error) {
	const leadSize = 96
	sig, err := readHeader(b, leadSize)
	if err != nil {
		return nil, fmt.Errorf("signature header: %w", err)
	}
	mainAt := leadSize + sig.size
	mainAt += (8 - mainAt%8) % 8
	main, err := readHeader(b, mainAt)
	if err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	hdr := b[mainAt : mainAt+main.size]
	hdrTag, allTag := int32(sigRSA), int32(sigPGP)
	if !s.RSA() {
		hdrTag, allTag = sigDSA, sigGPG
	}
	hdrSig, err := s.Detached(hdr)
	if err != nil {
		return nil, err
	}
	allSig, err := s.Detached(b[mainAt:])
	if err != nil {
		return nil, err
	}
	out := &header{}
	for _, e := range sig.entries {
		if e.tag == regionSignatures || slices.Contains([]int32{sigDSA, sigRSA, sigPGP, sigGPG}, e.tag) {
			continue
		}
		out.entries = append(out.entries, e)
	}
	out.bin(hdrTag, hdrSig)
	out.bin(allTag, allSig)
	sb, err := out.bytes(regionSignatures)
	if err != nil {
		return nil, err
	}
	signed := make([]byte, 0, len(b)+len(hdrSig)+len(allSig)+64)
	signed = append(signed, b[:leadSize]...)
	signed = append(signed, sb...)
	signed = append(signed, make([]byte, (8-len(sb)%8)%8)...)
	return append(signed, b[mainAt:]...), nil
}

// parsedHeader is a header read back: its entries (with their data) and
// its length in bytes from the magic to the end of its store.
type parsedHeader struct {
	entries []entry
	size    int
}

// readHeader reads the header structure at b[at:].
func readHeader(b []byte, at int) (parsedHeader, error) {
	if len(b) < at+16 || b[at] != 0x8e || b[at+1] != 0xad || b[at+2] != 0xe8 || b[at+3] != 0x01 {
		return parsedHeader{}, errors.New("not an RPM header (bad magic)")
	}
	n := int(binary.BigEndian.Uint32(b[at+8:]))
	hsize := int(binary.BigEndian.Uint32(b[at+12:]))
	index, store := at+16, at+16+16*n
	if n > 1<<16 || hsize > 1<<28 || len(b) < store+hsize {
		return parsedHeader{}, errors.New("truncated")
	}
	data := b[store : store+hsize]
	var es []entry
	for i := range n {
		e := b[index+16*i:]
		tag := int32(binary.BigEndian.Uint32(e))
		typ := binary.BigEndian.Uint32(e[4:])
		off := int(int32(binary.BigEndian.Uint32(e[8:])))
		count := binary.BigEndian.Uint32(e[12:])
		if off < 0 || off > len(data) {
			return parsedHeader{}, fmt.Errorf("tag %d: offset %d outside the store", tag, off)
		}
		size, err := dataSize(typ, count, data[off:])
		if err != nil {
			return parsedHeader{}, fmt.Errorf("tag %d: %w", tag, err)
		}
		es = append(es, entry{tag, typ, count, slices.Clone(data[off : off+size])})
	}
	return parsedHeader{es, 16 + 16*n + hsize}, nil
}

// dataSize is the length of an entry's data of type typ and count at the
// start of d.
func dataSize(typ, count uint32, d []byte) (int, error) {
	fixed := map[uint32]int{1: 1, 2: 1, typeInt16: 2, typeInt32: 4, 5: 8, typeBin: 1}
	if w, ok := fixed[typ]; ok {
		if size := w * int(count); size <= len(d) {
			return size, nil
		}
		return 0, errors.New("data past the store")
	}
	if typ != typeString && typ != typeStringArray && typ != typeI18NString {
		return 0, fmt.Errorf("unknown type %d", typ)
	}
	if typ == typeString {
		count = 1
	}
	size := 0
	for range count {
		end := slices.Index(d[size:], 0)
		if end < 0 {
			return 0, errors.New("unterminated string")
		}
		size += end + 1
	}
	return size, nil
}
