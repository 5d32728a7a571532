// Package sciir is the versioned binary .sciir program file: it encodes a fixed-point program
// (fixed.Program) and decodes it back (docs/sciir.md), computes the program ID, and prints a file
// readably (the disassembler). Writing a file atomically is the commands' job (internal/cli). Storage slots are assigned before, by the
// compiler's "slots" pass (passes.AssignSlots).
package sciir

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	mbits "math/bits"
	"os"
	"strings"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
)

// Magic starts every .sciir file. The high first byte and the CR LF / ^Z / LF tail detect
// transfers that mangle binary data (as in PNG).
var Magic = [8]byte{0x89, 'S', 'C', 'I', '\r', '\n', 0x1a, '\n'}

// Version is the newest file format version this package writes. Version 2 added the engine byte
// of matmul and conv instructions; version 1 files (no engine: every layer at the backend's
// default) are still read. Version 3 added the math opcodes (exp, sigmoid, tanh, recip, rsqrt,
// which carry no operands beyond the common ones); a program without them is still written as
// version 2, so that older builds keep reading it, and one with them is refused by those builds
// with a version error instead of an unknown opcode. Version 4 added sparse weight tensors in
// WDAT (a width byte with its high bit set: the non-zero values and their positions); a program
// whose weights are all written dense keeps the version its opcodes need. Version 5 added
// bmatmul (the product of two shared matrices, attention), on the same terms as version 3;
// version 6 the math opcode log (LogSoftmax), gather (Slice and Gather of runtime tensors) and
// bmatmul's engine byte (OT or HE, planned), likewise. Version 7 added value ranges: a byte after
// every relu (the operand's signed width when the comparison runs on the low bits, 0 for the
// whole ring) and, after every input and output entry, a flag byte with, when set, the input's
// range [lo, hi] as two signed 64-bit integers; a program with neither (no low-bit relu, no
// bounded input) keeps the older version. Version 8 added two bytes after every matmul's engine
// byte: the block size of its block-circulant weights (0: none recorded) and whether the fhe mode
// evaluates it in the frequency domain (1) or by the dense method (0); a program without such a
// matmul keeps the older version.
const Version = 8

// sparseFlag marks a sparse weight tensor in WDAT's width byte (version 4).
const sparseFlag = 0x80

// fileVersion is the version a file of f is written as: the oldest that can hold it. A program
// read from a file keeps the version it was read as (at least what its opcodes need), so that
// writing it again — either copy — gives the same program ID; its weights are then written
// sparse only if that version is 4 or newer. A new program is written as version 4 when some
// weight is worth writing sparse.
func fileVersion(f *File) int {
	v := 2
	for _, io := range f.Program.Inputs {
		if io.Bounded {
			v = 7
		}
	}
	for _, in := range f.Program.Instrs {
		switch {
		case in.Op == fixed.OpMatMul && in.Block != 0:
			v = 8
		case in.Op == fixed.OpReLU && in.Bits != 0:
			v = max(v, 7)
		case in.Op == fixed.OpLog || in.Op == fixed.OpGather ||
			in.Op == fixed.OpBatchMatMul && in.Engine != fixed.EngineDefault:
			v = max(v, 6)
		case in.Op == fixed.OpBatchMatMul:
			v = max(v, 5)
		default:
			if _, ok := in.Op.MathFunc(); ok {
				v = max(v, 3)
			}
		}
	}
	if f.Version != 0 || v >= 4 {
		return max(v, f.Version)
	}
	if f.Program.HasWeights() {
		for _, w := range f.Program.Weights {
			if sparseWeight(w.Data, weightWidth(w.Data)) {
				return 4
			}
		}
	}
	return v
}

// sparseWeight reports whether a weight tensor is written sparse: when the positions and values
// of its non-zero elements take less than half the bytes of the dense values (the saturation
// corrections of quantized models are almost all zeros).
func sparseWeight(data []int64, width int) bool {
	nnz := 0
	for _, v := range data {
		if v != 0 {
			nnz++
		}
	}
	return 8+nnz*(4+width) < len(data)*width/2
}

// minVersion is the oldest format version this package reads.
const minVersion = 1

// Section tags, in the order they appear in a file. WDAT (the weights) is present only in party
// 0's copy and is the only section excluded from the program ID.
const (
	tagHead = "HEAD"
	tagTens = "TENS"
	tagWgts = "WGTS"
	tagInst = "INST"
	tagInpt = "INPT"
	tagOutp = "OUTP"
	tagMeta = "META"
	tagWdat = "WDAT"
	tagEnd  = "END."
)

var sectionOrder = []string{tagHead, tagTens, tagWgts, tagInst, tagInpt, tagOutp, tagMeta, tagWdat, tagEnd}

// Ring kinds in the header.
const (
	ringPow2  = 1
	ringPrime = 2
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrFormat is wrapped by every error about a malformed program file.
var ErrFormat = errors.New("malformed .sciir program file")

// File is a decoded program file.
type File struct {
	Program *fixed.Program
	Backend string // the default backend ("sciot", "scihe", "clear")
	Meta    Meta
	ID      [32]byte // program ID: SHA-256 of everything but the weights section (set by Marshal and Unmarshal)
	// Version is the format version the file was read as (set by Unmarshal; 0 for a new program).
	// Write keeps it (raised only if the opcodes need more), so a file read and written again
	// keeps its ID.
	Version int
}

// IDString returns the program ID in hex.
func (f *File) IDString() string { return hex.EncodeToString(f.ID[:]) }

// DefaultBackend is written when File.Backend is empty.
const DefaultBackend = "sciot"

// Marshal encodes f into memory. With withWeights the weights section is included (party 0's
// copy; every weight must have its data); without, the result is the client copy. f.ID is set.
func Marshal(f *File, withWeights bool) ([]byte, error) {
	var buf bytes.Buffer
	if err := Write(&buf, f, withWeights); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Write encodes f to w (see Marshal). The weights section is streamed, so a large model is never
// held in memory twice.
func Write(w io.Writer, f *File, withWeights bool) error {
	p := f.Program
	if p == nil {
		return fmt.Errorf("write program: no program")
	}
	if err := p.Validate(); err != nil {
		return fmt.Errorf("write program: %w", err)
	}
	if err := f.Meta.checkIO(ioNames(p.Inputs), ioNames(p.Outputs)); err != nil {
		return fmt.Errorf("write program metadata: %w", err)
	}
	if withWeights && !p.HasWeights() {
		return fmt.Errorf("write program: the program has no weight data to write")
	}
	backend := f.Backend
	if backend == "" {
		backend = DefaultBackend
	}
	m := f.Meta
	m.FHE = p.FHE // the fhe mode's parameters travel in the metadata (part of the program ID)
	meta, err := json.Marshal(&m)
	if err != nil {
		return fmt.Errorf("write program metadata: %w", err)
	}
	var head bytes.Buffer
	head.Write(Magic[:])
	var ver [4]byte
	version := fileVersion(f)
	binary.LittleEndian.PutUint16(ver[:], uint16(version))
	head.Write(ver[:])
	add := func(tag string, payload []byte) {
		head.Write(sectionHeader(tag, uint64(len(payload))))
		head.Write(payload)
		crc := crc32.Update(crc32.Checksum(sectionHeader(tag, uint64(len(payload))), castagnoli), castagnoli, payload)
		head.Write(binary.LittleEndian.AppendUint32(nil, crc))
	}
	add(tagHead, encodeHead(p, backend))
	add(tagTens, encodeTensors(p))
	add(tagWgts, encodeWeightTable(p))
	add(tagInst, encodeInstrs(p, version))
	add(tagInpt, encodeIO(p, p.Inputs, version))
	add(tagOutp, encodeIO(p, p.Outputs, version))
	add(tagMeta, meta)
	end := endSection()
	// The ID covers everything but the weights, including the END section (the same in both copies).
	id := sha256.New()
	id.Write(head.Bytes())
	id.Write(end)
	copy(f.ID[:], id.Sum(nil))
	if _, err := w.Write(head.Bytes()); err != nil {
		return fmt.Errorf("write program: %w", err)
	}
	if withWeights {
		if err := writeWeights(w, p, f.ID, version >= 4); err != nil {
			return fmt.Errorf("write program weights: %w", err)
		}
	}
	if _, err := w.Write(end); err != nil {
		return fmt.Errorf("write program: %w", err)
	}
	return nil
}

func sectionHeader(tag string, n uint64) []byte {
	return binary.LittleEndian.AppendUint64([]byte(tag), n)
}

func endSection() []byte {
	h := sectionHeader(tagEnd, 0)
	return binary.LittleEndian.AppendUint32(h, crc32.Checksum(h, castagnoli))
}

// CheckCopyName refuses to put a copy with weights under a name ending in .client.sciir, the
// name of a client copy: a server's weights must not land in the file a user hands to clients.
// Writers of program files call it before they write.
func CheckCopyName(path string, f *File, withWeights bool) error {
	if withWeights && f.Program.HasWeights() && strings.HasSuffix(strings.ToLower(path), ".client.sciir") {
		return fmt.Errorf("write program: %s is a client copy's name, but this copy holds the weights; choose a name that does not end in .client.sciir", path)
	}
	return nil
}

// ReadFile reads and decodes a program file.
func ReadFile(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read program: %w", err)
	}
	f, err := Unmarshal(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// weightWidth is the number of bytes that hold every value of data in two's complement (1..8).
func weightWidth(data []int64) int {
	bits := 0
	for _, v := range data {
		if v < 0 {
			v = ^v // -1 -> 0, -128 -> 127: the magnitude that needs the same bits
		}
		bits = max(bits, mbits.Len64(uint64(v)))
	}
	return (bits + 1 + 7) / 8 // plus the sign bit
}

// writeWeights streams the WDAT section: the program ID, then per weight its value count, its
// byte width and the values as little-endian two's complement of that width; a tensor that is
// mostly zeros (sparseWeight) has the width's high bit set and gives its non-zero count, their
// positions (u32, ascending) and only their values.
func writeWeights(w io.Writer, p *fixed.Program, id [32]byte, sparseOK bool) error {
	widths := make([]int, len(p.Weights))
	sparse := make([]bool, len(p.Weights))
	n := uint64(32 + 4)
	for i, wt := range p.Weights {
		widths[i] = weightWidth(wt.Data)
		sparse[i] = sparseOK && sparseWeight(wt.Data, widths[i])
		if !sparse[i] {
			n += 9 + uint64(len(wt.Data)*widths[i])
			continue
		}
		nnz := uint64(0)
		for _, v := range wt.Data {
			if v != 0 {
				nnz++
			}
		}
		n += 17 + nnz*uint64(4+widths[i])
	}
	hdr := sectionHeader(tagWdat, n)
	crc := crc32.Checksum(hdr, castagnoli)
	put := func(b []byte) error {
		crc = crc32.Update(crc, castagnoli, b)
		_, err := w.Write(b)
		return err
	}
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	if err := put(append(id[:0:0], id[:]...)); err != nil {
		return err
	}
	if err := put(binary.LittleEndian.AppendUint32(nil, uint32(len(p.Weights)))); err != nil {
		return err
	}
	buf := make([]byte, 0, 1<<16)
	flush := func() error {
		if len(buf) < 1<<16-16 {
			return nil
		}
		err := put(buf)
		buf = buf[:0]
		return err
	}
	value := func(v int64, width int) {
		u := uint64(v)
		for b := 0; b < width; b++ {
			buf = append(buf, byte(u>>(8*b)))
		}
	}
	for i, wt := range p.Weights {
		buf = binary.LittleEndian.AppendUint64(buf[:0], uint64(len(wt.Data)))
		if !sparse[i] {
			buf = append(buf, byte(widths[i]))
			for _, v := range wt.Data {
				value(v, widths[i])
				if err := flush(); err != nil {
					return err
				}
			}
		} else {
			buf = append(buf, byte(sparseFlag|widths[i]))
			nnz := 0
			for _, v := range wt.Data {
				if v != 0 {
					nnz++
				}
			}
			buf = binary.LittleEndian.AppendUint64(buf, uint64(nnz))
			for j, v := range wt.Data {
				if v != 0 {
					buf = binary.LittleEndian.AppendUint32(buf, uint32(j))
					if err := flush(); err != nil {
						return err
					}
				}
			}
			for _, v := range wt.Data {
				if v != 0 {
					value(v, widths[i])
					if err := flush(); err != nil {
						return err
					}
				}
			}
		}
		if err := put(buf); err != nil {
			return err
		}
		buf = buf[:0]
	}
	_, err := w.Write(binary.LittleEndian.AppendUint32(nil, crc))
	return err
}

// writer helpers -------------------------------------------------------------------------------

type enc struct{ b []byte }

func (e *enc) u8(v int)  { e.b = append(e.b, byte(v)) }
func (e *enc) u16(v int) { e.b = binary.LittleEndian.AppendUint16(e.b, uint16(v)) }
func (e *enc) u32(v int) { e.b = binary.LittleEndian.AppendUint32(e.b, uint32(v)) }
func (e *enc) i32(v int) { e.b = binary.LittleEndian.AppendUint32(e.b, uint32(int32(v))) }
func (e *enc) u64(v uint64) {
	e.b = binary.LittleEndian.AppendUint64(e.b, v)
}
func (e *enc) str(s string) {
	if len(s) > math.MaxUint16 {
		s = s[:math.MaxUint16]
	}
	e.u16(len(s))
	e.b = append(e.b, s...)
}
func (e *enc) shape(s ir.Shape) {
	e.u8(len(s))
	for _, d := range s {
		e.u32(d)
	}
}
func (e *enc) ints32(v []int) {
	for _, x := range v {
		e.u32(x)
	}
}

func encodeHead(p *fixed.Program, backend string) []byte {
	var e enc
	if p.Modulus != 0 {
		e.u8(ringPrime)
		e.u64(p.Modulus)
	} else {
		e.u8(ringPow2)
		e.u64(uint64(p.Bits))
	}
	e.u8(p.Scale)
	e.str(backend)
	return e.b
}

func encodeTensors(p *fixed.Program) []byte {
	var e enc
	e.u32(len(p.Tensors))
	for _, t := range p.Tensors {
		e.str(t.Name)
		e.shape(t.Shape)
		e.u8(t.Scale)
		e.i32(t.Slot)
	}
	return e.b
}

func encodeWeightTable(p *fixed.Program) []byte {
	var e enc
	e.u32(len(p.Weights))
	for _, w := range p.Weights {
		e.str(w.Name)
		e.shape(w.Shape)
		e.u8(w.Scale)
	}
	return e.b
}

func encodeWindow(e *enc, w ir.Window) {
	k := len(w.Kernel)
	e.u8(k)
	e.ints32(w.Kernel)
	e.ints32(w.Strides)
	e.ints32(w.Pads)
	e.ints32(w.Dilations)
	if w.CeilMode {
		e.u8(1)
	} else {
		e.u8(0)
	}
}

func encodeInstrs(p *fixed.Program, version int) []byte {
	var e enc
	e.u32(len(p.Instrs))
	for _, in := range p.Instrs {
		e.u8(int(in.Op))
		e.i32(in.Out)
		e.u16(len(in.In))
		e.ints32(in.In)
		e.i32(in.Weight)
		e.str(in.Source)
		switch in.Op {
		case fixed.OpInput, fixed.OpOutput:
			e.u32(in.Index)
		case fixed.OpScaleUp:
			e.u8(in.Shift)
		case fixed.OpReLU:
			if version >= 7 {
				e.u8(in.Bits)
			}
		case fixed.OpTrunc:
			e.u8(in.Shift)
			if in.NonNeg {
				e.u8(1)
			} else {
				e.u8(0)
			}
		case fixed.OpConv:
			e.u32(in.Group)
			encodeWindow(&e, in.Win)
			e.u8(int(in.Engine))
		case fixed.OpMatMul:
			e.u8(int(in.Engine))
			if version >= 8 {
				e.u8(in.Block)
				if in.Spectral {
					e.u8(1)
				} else {
					e.u8(0)
				}
			}
		case fixed.OpBatchMatMul:
			if version >= 6 {
				e.u8(int(in.Engine))
			}
		case fixed.OpMaxPool, fixed.OpSumPool:
			encodeWindow(&e, in.Win)
		case fixed.OpDiv:
			e.u32(len(in.Divisors))
			e.ints32(in.Divisors)
		case fixed.OpArgMax, fixed.OpConcat:
			e.u8(in.Axis)
		case fixed.OpTranspose:
			e.u8(len(in.Perm))
			for _, a := range in.Perm {
				e.u8(a)
			}
		case fixed.OpGather:
			e.u8(len(in.Select))
			for _, s := range in.Select {
				e.u32(len(s))
				e.ints32(s)
			}
		case fixed.OpPad:
			e.u8(int(in.PadMode))
			e.u8(len(in.Pads))
			e.ints32(in.Pads)
			e.u64(uint64(in.PadValue))
		}
	}
	return e.b
}

func encodeIO(p *fixed.Program, ios []fixed.IO, version int) []byte {
	var e enc
	e.u32(len(ios))
	for _, io := range ios {
		e.str(io.Name)
		e.u32(io.Tensor)
		e.u8(io.Party)
		e.u8(p.Tensors[io.Tensor].Scale)
		if version >= 7 {
			if io.Bounded {
				e.u8(1)
				e.u64(uint64(io.Lo))
				e.u64(uint64(io.Hi))
			} else {
				e.u8(0)
			}
		}
	}
	return e.b
}
