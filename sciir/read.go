package sciir

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"math/bits"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
)

// SectionInfo describes one section of a decoded file (for the disassembler).
type SectionInfo struct {
	Tag    string
	Offset int // of the tag
	Length int // payload bytes
	CRC    uint32
}

// Unmarshal decodes and validates a program file. Truncated or corrupted input, an unknown version,
// section or opcode all give an error wrapping ErrFormat; the decoded program has passed
// fixed.Program.Validate.
func Unmarshal(b []byte) (*File, error) {
	f, _, err := unmarshal(b)
	return f, err
}

func formatErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrFormat, fmt.Sprintf(format, args...))
}

func unmarshal(b []byte) (*File, []SectionInfo, error) {
	if len(b) < len(Magic) || !bytes.Equal(b[:len(Magic)], Magic[:]) {
		if len(b) >= 4 && bytes.Equal(b[1:4], []byte("SCI")) {
			return nil, nil, formatErr("damaged file signature (was it transferred in text mode?)")
		}
		return nil, nil, formatErr("not a .sciir program file (bad signature)")
	}
	if len(b) < len(Magic)+4 {
		return nil, nil, formatErr("truncated in the file header")
	}
	ver := binary.LittleEndian.Uint16(b[8:])
	if ver < minVersion || ver > Version {
		return nil, nil, formatErr("unsupported format version %d (this build reads versions %d to %d)", ver, minVersion, Version)
	}
	if r := binary.LittleEndian.Uint16(b[10:]); r != 0 {
		return nil, nil, formatErr("reserved header field is %d, want 0", r)
	}
	id := sha256.New()
	id.Write(b[:12])
	off := 12
	payloads := map[string][]byte{}
	var infos []SectionInfo
	next := 0 // index into sectionOrder of the next allowed section
	ended := false
	for off < len(b) {
		if ended {
			return nil, nil, formatErr("%d bytes after the END section", len(b)-off)
		}
		if len(b)-off < 16 {
			return nil, nil, formatErr("truncated: %d bytes at offset %d cannot hold a section", len(b)-off, off)
		}
		tag := string(b[off : off+4])
		n := binary.LittleEndian.Uint64(b[off+4:])
		if n > uint64(len(b)-off-16) {
			return nil, nil, formatErr("truncated: section %q at offset %d declares %d bytes, only %d remain", tag, off, n, len(b)-off-16)
		}
		end := off + 12 + int(n)
		want := binary.LittleEndian.Uint32(b[end:])
		if got := crc32.Checksum(b[off:end], castagnoli); got != want {
			return nil, nil, formatErr("section %q at offset %d is corrupted (CRC-32C %08x, stored %08x)", tag, off, got, want)
		}
		pos := -1
		for i, t := range sectionOrder {
			if t == tag {
				pos = i
			}
		}
		switch {
		case pos < 0:
			return nil, nil, formatErr("unknown section %q at offset %d", tag, off)
		case pos < next:
			return nil, nil, formatErr("section %q at offset %d is out of order or repeated", tag, off)
		}
		// Every section but WDAT is required.
		for _, t := range sectionOrder[next:pos] {
			if t != tagWdat {
				return nil, nil, formatErr("section %q is missing (found %q at offset %d)", t, tag, off)
			}
		}
		next = pos + 1
		if tag != tagWdat {
			id.Write(b[off : end+4])
		}
		payloads[tag] = b[off+12 : end]
		infos = append(infos, SectionInfo{Tag: tag, Offset: off, Length: int(n), CRC: want})
		if tag == tagEnd {
			ended = true
			if n != 0 {
				return nil, nil, formatErr("END section has %d payload bytes", n)
			}
		}
		off = end + 4
	}
	if !ended {
		return nil, nil, formatErr("truncated: the END section is missing (the file ends at byte %d)", len(b))
	}
	f := &File{Program: &fixed.Program{}, Version: int(ver)}
	copy(f.ID[:], id.Sum(nil))
	p := f.Program
	steps := []struct {
		tag string
		fn  func(*dec) error
	}{
		{tagHead, func(d *dec) error { return decodeHead(d, f) }},
		{tagTens, func(d *dec) error { return decodeTensors(d, p) }},
		{tagWgts, func(d *dec) error { return decodeWeightTable(d, p) }},
		{tagInst, func(d *dec) error { return decodeInstrs(d, p, int(ver)) }},
		{tagInpt, func(d *dec) error { return decodeIO(d, p, &p.Inputs, int(ver)) }},
		{tagOutp, func(d *dec) error { return decodeIO(d, p, &p.Outputs, int(ver)) }},
	}
	for _, s := range steps {
		d := &dec{b: payloads[s.tag]}
		err := s.fn(d)
		if err == nil && d.err == nil && d.off != len(d.b) {
			err = fmt.Errorf("%d unexpected trailing bytes", len(d.b)-d.off)
		}
		if err == nil {
			err = d.err
		}
		if err != nil {
			return nil, nil, formatErr("section %s: %v", s.tag, err)
		}
	}
	if err := json.Unmarshal(payloads[tagMeta], &f.Meta); err != nil {
		return nil, nil, formatErr("section META: %v", err)
	}
	p.FHE = f.Meta.FHE
	if err := f.Meta.checkIO(ioNames(p.Inputs), ioNames(p.Outputs)); err != nil {
		return nil, nil, formatErr("section META: %v", err)
	}
	if w, ok := payloads[tagWdat]; ok {
		d := &dec{b: w}
		err := decodeWeightData(d, p, f.ID, int(ver))
		if err == nil && d.err == nil && d.off != len(d.b) {
			err = fmt.Errorf("%d unexpected trailing bytes", len(d.b)-d.off)
		}
		if err == nil {
			err = d.err
		}
		if err != nil {
			return nil, nil, formatErr("section WDAT: %v", err)
		}
	}
	if err := p.Validate(); err != nil {
		return nil, nil, formatErr("invalid program: %v", err)
	}
	return f, infos, nil
}

// dec reads little-endian fields; the first failure sticks in err and later reads return zero.
type dec struct {
	b   []byte
	off int
	err error
}

func (d *dec) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || len(d.b)-d.off < n {
		d.err = fmt.Errorf("truncated at byte %d (need %d more bytes, have %d)", d.off, n, len(d.b)-d.off)
		return nil
	}
	s := d.b[d.off : d.off+n]
	d.off += n
	return s
}

func (d *dec) u8() int {
	s := d.take(1)
	if s == nil {
		return 0
	}
	return int(s[0])
}

func (d *dec) u16() int {
	s := d.take(2)
	if s == nil {
		return 0
	}
	return int(binary.LittleEndian.Uint16(s))
}

func (d *dec) u32() int {
	s := d.take(4)
	if s == nil {
		return 0
	}
	return int(binary.LittleEndian.Uint32(s))
}

func (d *dec) i32() int {
	s := d.take(4)
	if s == nil {
		return 0
	}
	return int(int32(binary.LittleEndian.Uint32(s)))
}

func (d *dec) u64() uint64 {
	s := d.take(8)
	if s == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(s)
}

func (d *dec) str() string {
	n := d.u16()
	return string(d.take(n))
}

// count reads an element count and checks that the remaining bytes can hold that many entries of
// at least minSize bytes each, so that a corrupted count cannot cause a huge allocation.
func (d *dec) count(what string, minSize int) int {
	n := d.u32()
	if d.err == nil && n*minSize > len(d.b)-d.off {
		d.err = fmt.Errorf("%d %s cannot fit in the %d remaining bytes", n, what, len(d.b)-d.off)
		return 0
	}
	return n
}

func (d *dec) shape() ir.Shape {
	r := d.u8()
	s := make(ir.Shape, 0, r)
	for i := 0; i < r && d.err == nil; i++ {
		s = append(s, d.u32())
	}
	return s
}

func (d *dec) ints32(n int) []int {
	if d.err != nil {
		return nil
	}
	if n*4 > len(d.b)-d.off {
		d.err = fmt.Errorf("truncated at byte %d (%d values do not fit)", d.off, n)
		return nil
	}
	v := make([]int, n)
	for i := range v {
		v[i] = d.u32()
	}
	return v
}

func decodeHead(d *dec, f *File) error {
	kind := d.u8()
	param := d.u64()
	scale := d.u8()
	f.Backend = d.str()
	if d.err != nil {
		return d.err
	}
	switch kind {
	case ringPow2:
		if param < 1 || param > 64 {
			return fmt.Errorf("ring Z_2^%d: bitwidth must be 1..64", param)
		}
	case ringPrime:
		if param < 3 || param&1 == 0 {
			return fmt.Errorf("ring Z_%d: the modulus must be odd and at least 3", param)
		}
		f.Program.Modulus = param
		f.Program.Bits = bits.Len64(param)
	default:
		return fmt.Errorf("unknown ring kind %d", kind)
	}
	if kind == ringPow2 {
		f.Program.Bits = int(param)
	}
	f.Program.Scale = scale
	return nil
}

func decodeTensors(d *dec, p *fixed.Program) error {
	n := d.count("tensors", 8)
	p.Tensors = make([]fixed.Tensor, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		var t fixed.Tensor
		t.Name = d.str()
		t.Shape = d.shape()
		t.Scale = d.u8()
		t.Slot = d.i32()
		p.Tensors = append(p.Tensors, t)
	}
	return d.err
}

func decodeWeightTable(d *dec, p *fixed.Program) error {
	n := d.count("weights", 4)
	p.Weights = make([]fixed.Weight, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		var w fixed.Weight
		w.Name = d.str()
		w.Shape = d.shape()
		w.Scale = d.u8()
		p.Weights = append(p.Weights, w)
	}
	return d.err
}

func decodeWindow(d *dec) (ir.Window, error) {
	k := d.u8()
	if k > 2 {
		return ir.Window{}, fmt.Errorf("window with %d spatial dimensions", k)
	}
	w := ir.Window{Kernel: d.ints32(k), Strides: d.ints32(k), Pads: d.ints32(2 * k), Dilations: d.ints32(k)}
	switch d.u8() {
	case 0:
	case 1:
		w.CeilMode = true
	default:
		return w, fmt.Errorf("bad ceil-mode flag")
	}
	return w, d.err
}

func decodeInstrs(d *dec, p *fixed.Program, version int) error {
	n := d.count("instructions", 13)
	p.Instrs = make([]*fixed.Instr, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		in := &fixed.Instr{Op: fixed.Opcode(d.u8()), Out: d.i32()}
		in.In = d.ints32(d.u16())
		in.Weight = d.i32()
		in.Source = d.str()
		if d.err != nil {
			break
		}
		var err error
		switch in.Op {
		case fixed.OpInput, fixed.OpOutput:
			in.Index = d.u32()
		case fixed.OpScaleUp:
			in.Shift = d.u8()
		case fixed.OpTrunc:
			in.Shift = d.u8()
			switch d.u8() {
			case 0:
			case 1:
				in.NonNeg = true
			default:
				err = fmt.Errorf("bad trunc flags")
			}
		case fixed.OpConv:
			in.Group = d.u32()
			in.Win, err = decodeWindow(d)
			if version >= 2 {
				in.Engine = fixed.Engine(d.u8())
			}
		case fixed.OpMaxPool, fixed.OpSumPool:
			in.Win, err = decodeWindow(d)
		case fixed.OpDiv:
			in.Divisors = d.ints32(d.count("divisors", 4))
		case fixed.OpArgMax, fixed.OpConcat:
			in.Axis = d.u8()
		case fixed.OpTranspose:
			r := d.u8()
			for j := 0; j < r && d.err == nil; j++ {
				in.Perm = append(in.Perm, d.u8())
			}
		case fixed.OpPad:
			in.PadMode = fixed.PadMode(d.u8())
			in.Pads = d.ints32(d.u8())
			in.PadValue = int64(d.u64())
		case fixed.OpMatMul:
			if version >= 2 {
				in.Engine = fixed.Engine(d.u8())
			}
			if version >= 8 {
				in.Block = d.u8()
				switch d.u8() {
				case 0:
				case 1:
					in.Spectral = true
				default:
					err = fmt.Errorf("matmul: bad frequency-domain flag")
				}
			}
		case fixed.OpReLU:
			if version >= 7 {
				in.Bits = d.u8()
			}
		case fixed.OpAddConst, fixed.OpMulConst, fixed.OpAdd, fixed.OpSub, fixed.OpReshape,
			fixed.OpMul:
		case fixed.OpExp, fixed.OpSigmoid, fixed.OpTanh, fixed.OpRecip, fixed.OpRsqrt:
			if version < 3 {
				err = fmt.Errorf("math opcode %s in a version %d file (math opcodes arrived in version 3)", in.Op, version)
			}
		case fixed.OpBatchMatMul:
			if version < 5 {
				err = fmt.Errorf("opcode %s in a version %d file (it arrived in version 5)", in.Op, version)
			}
			if version >= 6 {
				in.Engine = fixed.Engine(d.u8())
			}
		case fixed.OpGather:
			r := d.u8()
			in.Select = make([][]int, r)
			for a := 0; a < r && d.err == nil; a++ {
				in.Select[a] = d.ints32(d.count("indices", 4))
			}
			if version < 6 {
				err = fmt.Errorf("opcode %s in a version %d file (it arrived in version 6)", in.Op, version)
			}
		case fixed.OpLog:
			if version < 6 {
				err = fmt.Errorf("opcode %s in a version %d file (it arrived in version 6)", in.Op, version)
			}
		default:
			err = fmt.Errorf("unknown opcode %d (written by a newer compiler?)", uint8(in.Op))
		}
		if err != nil {
			return fmt.Errorf("instruction %d: %w", i, err)
		}
		p.Instrs = append(p.Instrs, in)
	}
	return d.err
}

func decodeIO(d *dec, p *fixed.Program, ios *[]fixed.IO, version int) error {
	n := d.count("entries", 8)
	*ios = make([]fixed.IO, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		io := fixed.IO{Name: d.str(), Tensor: d.u32(), Party: d.u8()}
		scale := d.u8()
		if version >= 7 {
			switch d.u8() {
			case 0:
			case 1:
				io.Bounded, io.Lo, io.Hi = true, int64(d.u64()), int64(d.u64())
			default:
				if d.err == nil {
					return fmt.Errorf("entry %d (%q): bad range flag", i, io.Name)
				}
			}
		}
		if d.err != nil {
			break
		}
		if io.Tensor >= len(p.Tensors) {
			return fmt.Errorf("entry %d (%q): tensor %d out of range", i, io.Name, io.Tensor)
		}
		if scale != p.Tensors[io.Tensor].Scale {
			return fmt.Errorf("entry %d (%q): scale %d, its tensor has %d", i, io.Name, scale, p.Tensors[io.Tensor].Scale)
		}
		*ios = append(*ios, io)
	}
	return d.err
}

func decodeWeightData(d *dec, p *fixed.Program, id [32]byte, version int) error {
	got := d.take(32)
	if d.err != nil {
		return d.err
	}
	if !bytes.Equal(got, id[:]) {
		return fmt.Errorf("the weights belong to another program (ID %x, this program is %x)", got[:8], id[:8])
	}
	n := d.count("weights", 8)
	if d.err == nil && n != len(p.Weights) {
		return fmt.Errorf("%d weight tensors, the weight table lists %d", n, len(p.Weights))
	}
	for i := 0; i < n && d.err == nil; i++ {
		w := &p.Weights[i]
		cnt := d.u64()
		width := d.u8()
		size, err := shapeSize(w.Shape)
		if err != nil {
			return fmt.Errorf("weight %d (%s): %w", i, w.Name, err)
		}
		if d.err != nil {
			break
		}
		if cnt != uint64(size) {
			return fmt.Errorf("weight %d (%s): %d values for shape %v", i, w.Name, cnt, w.Shape)
		}
		sparse := width&sparseFlag != 0
		width &^= sparseFlag
		if sparse && version < 4 {
			return fmt.Errorf("weight %d (%s): sparse weights in a version %d file (they arrived in version 4)", i, w.Name, version)
		}
		if width < 1 || width > 8 {
			return fmt.Errorf("weight %d (%s): value width %d bytes (want 1..8)", i, w.Name, width)
		}
		sh := uint(64 - 8*width)
		val := func(raw []byte, j int) int64 {
			var u uint64
			for b := width - 1; b >= 0; b-- {
				u = u<<8 | uint64(raw[j*width+b])
			}
			return int64(u<<sh) >> sh
		}
		if !sparse {
			raw := d.take(width * size)
			if raw == nil {
				break
			}
			w.Data = make([]int64, size)
			for j := range w.Data {
				w.Data[j] = val(raw, j)
			}
			continue
		}
		nnz := d.u64()
		if d.err != nil {
			break
		}
		if nnz > uint64(size) {
			return fmt.Errorf("weight %d (%s): %d non-zero values for %d elements", i, w.Name, nnz, size)
		}
		if nnz*uint64(4+width) > uint64(len(d.b)-d.off) {
			return fmt.Errorf("weight %d (%s): truncated: %d non-zero values need %d bytes, %d remain", i, w.Name, nnz, nnz*uint64(4+width), len(d.b)-d.off)
		}
		pos := d.take(4 * int(nnz))
		raw := d.take(width * int(nnz))
		if d.err != nil {
			break
		}
		w.Data = make([]int64, size)
		prev := -1
		for j := 0; j < int(nnz); j++ {
			at := int(binary.LittleEndian.Uint32(pos[4*j:]))
			if at <= prev || at >= size {
				return fmt.Errorf("weight %d (%s): sparse position %d after %d (positions must ascend below %d)", i, w.Name, at, prev, size)
			}
			v := val(raw, j)
			if v == 0 {
				return fmt.Errorf("weight %d (%s): a sparse tensor lists a zero at position %d", i, w.Name, at)
			}
			w.Data[at] = v
			prev = at
		}
	}
	return d.err
}

func ioNames(ios []fixed.IO) []string {
	var names []string
	for _, io := range ios {
		names = append(names, io.Name)
	}
	return names
}

func shapeSize(s ir.Shape) (int, error) {
	n := 1
	for _, d := range s {
		if d != 0 && n > fixed.MaxElems/d {
			return 0, fmt.Errorf("shape %v is too large", s)
		}
		n *= d
	}
	return n, nil
}
