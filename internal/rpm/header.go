package rpm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
)

// A small writer of RPM v4 header structures, for the binary and the
// source packages (write.go).

// Header entry types.
const (
	typeInt16       = 3
	typeInt32       = 4
	typeString      = 6
	typeBin         = 7
	typeStringArray = 8
	typeI18NString  = 9
)

// Region tags: the first entry of the signature and of the main header.
const (
	regionSignatures = 62
	regionImmutable  = 63
)

type entry struct {
	tag   int32
	typ   uint32
	count uint32
	data  []byte
}

type header struct{ entries []entry }

func (h *header) add(tag int32, typ uint32, count int, data []byte) {
	h.entries = append(h.entries, entry{tag, typ, uint32(count), data})
}

func (h *header) str(tag int32, s string) { h.add(tag, typeString, 1, append([]byte(s), 0)) }

func (h *header) i18n(tag int32, s string) { h.add(tag, typeI18NString, 1, append([]byte(s), 0)) }

func (h *header) bin(tag int32, b []byte) { h.add(tag, typeBin, len(b), b) }

func (h *header) strs(tag int32, ss ...string) {
	var b []byte
	for _, s := range ss {
		b = append(append(b, s...), 0)
	}
	h.add(tag, typeStringArray, len(ss), b)
}

func (h *header) int32s(tag int32, vs ...int32) {
	b := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.BigEndian.PutUint32(b[4*i:], uint32(v))
	}
	h.add(tag, typeInt32, len(vs), b)
}

func (h *header) uint16s(tag int32, vs ...uint16) {
	b := make([]byte, 2*len(vs))
	for i, v := range vs {
		binary.BigEndian.PutUint16(b[2*i:], v)
	}
	h.add(tag, typeInt16, len(vs), b)
}

func (h *header) int16s(tag int32, vs ...int16) {
	us := make([]uint16, len(vs))
	for i, v := range vs {
		us[i] = uint16(v)
	}
	h.uint16s(tag, us...)
}

var alignment = map[uint32]int{typeInt16: 2, typeInt32: 4}

// bytes serialises the header with its region entry: the intro (magic,
// entry count, data size), the index sorted by tag, then the data store,
// which ends with the region trailer.
func (h *header) bytes(region int32) ([]byte, error) {
	es := slices.Clone(h.entries)
	slices.SortFunc(es, func(a, b entry) int { return int(a.tag) - int(b.tag) })
	for i := 1; i < len(es); i++ {
		if es[i].tag == es[i-1].tag {
			return nil, fmt.Errorf("rpm header: tag %d twice", es[i].tag)
		}
	}
	n := len(es) + 1
	var index, store bytes.Buffer
	put := func(w *bytes.Buffer, tag int32, typ uint32, off int32, count uint32) {
		binary.Write(w, binary.BigEndian, []uint32{uint32(tag), typ, uint32(off), count})
	}
	for _, e := range es {
		if a := alignment[e.typ]; a > 0 {
			for store.Len()%a != 0 {
				store.WriteByte(0)
			}
		}
		put(&index, e.tag, e.typ, int32(store.Len()), e.count)
		store.Write(e.data)
	}
	trailerAt := store.Len()
	put(&store, region, typeBin, int32(-16*n), 16)
	var out bytes.Buffer
	out.Write([]byte{0x8e, 0xad, 0xe8, 0x01, 0, 0, 0, 0})
	binary.Write(&out, binary.BigEndian, []uint32{uint32(n), uint32(store.Len())})
	put(&out, region, typeBin, int32(trailerAt), 16)
	out.Write(index.Bytes())
	out.Write(store.Bytes())
	return out.Bytes(), nil
}

// lead is the 96-byte RPM lead; source packages have type 1.
func lead(nvr string, source bool) []byte {
	b := make([]byte, 96)
	copy(b, []byte{0xed, 0xab, 0xee, 0xdb, 3, 0})
	if source {
		b[7] = 1
	}
	b[9] = 1 // arch number
	name := []byte(nvr)
	if len(name) > 65 {
		name = name[:65]
	}
	copy(b[10:76], name)
	b[77] = 1 // os number
	b[79] = 5 // signature type: header-style
	return b
}
