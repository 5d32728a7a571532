package sciir

import (
	"bytes"
	"context"
	"encoding/binary"
	"testing"

	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/vm"
	"github.com/cryptflow-go/cryptflow/vm/cleartext"
)

// checkDecoded asserts the properties every accepted file must have: it re-encodes, and the
// re-encoding decodes to the same program ID.
func checkDecoded(t *testing.T, f *File) {
	b, err := Marshal(f, f.Program.HasWeights())
	if err != nil {
		t.Fatalf("accepted file does not re-encode: %v", err)
	}
	g, err := Unmarshal(b)
	if err != nil {
		t.Fatalf("re-encoded file does not decode: %v", err)
	}
	if g.ID != f.ID {
		t.Fatalf("program ID changed on re-encoding")
	}
	// A small accepted program must run on the cleartext VM without panicking (errors are fine).
	total := 0
	for _, tt := range f.Program.Tensors {
		total += tt.Shape.Size()
	}
	if total > 1<<16 || !f.Program.HasWeights() {
		return
	}
	r, err := ring.New(f.Program.Bits)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := cleartext.New(r)
	m, err := vm.New(f.Program, c)
	if err != nil {
		return
	}
	inputs := make([]ring.Tensor, len(f.Program.Inputs))
	for i, io := range f.Program.Inputs {
		inputs[i] = ring.NewTensor(f.Program.Tensors[io.Tensor].Shape)
	}
	_, _ = m.Run(context.Background(), inputs)
}

// FuzzUnmarshal feeds arbitrary bytes to the reader: it must never panic, and whatever it accepts
// must re-encode.
func FuzzUnmarshal(f *testing.F) {
	file := testFile(f)
	full, err := Marshal(file, true)
	if err != nil {
		f.Fatal(err)
	}
	client, _ := Marshal(file, false)
	f.Add(full)
	f.Add(client)
	f.Add(full[:40])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := Unmarshal(b)
		if err != nil {
			return
		}
		checkDecoded(t, got)
	})
}

// splitSections returns the payload of each section of a well-formed file, in order.
func splitSections(b []byte) (tags []string, payloads [][]byte) {
	off := 12
	for off+16 <= len(b) {
		n := int(binary.LittleEndian.Uint64(b[off+4:]))
		tags = append(tags, string(b[off:off+4]))
		payloads = append(payloads, b[off+12:off+12+n])
		off += 16 + n
	}
	return tags, payloads
}

func joinSections(ver byte, tags []string, payloads [][]byte) []byte {
	var out bytes.Buffer
	out.Write(Magic[:])
	out.Write([]byte{ver, 0, 0, 0})
	for i, tag := range tags {
		out.WriteString(tag)
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(payloads[i])))
		out.Write(n[:])
		out.Write(payloads[i])
		out.Write([]byte{0, 0, 0, 0})
	}
	return rechecksum(out.Bytes())
}

// FuzzSections replaces one section's payload by fuzzed bytes and fixes the checksums, so that
// the fuzzer reaches the section decoders and the program validator behind the CRC check.
func FuzzSections(f *testing.F) {
	full, err := Marshal(testFile(f), true)
	if err != nil {
		f.Fatal(err)
	}
	tags, payloads := splitSections(full)
	for i, p := range payloads {
		f.Add(uint8(i), bytes.Clone(p))
		if len(p) > 4 {
			f.Add(uint8(i), bytes.Clone(p[:len(p)/2]))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, payload []byte) {
		i := int(which) % len(tags)
		ps := make([][]byte, len(payloads))
		copy(ps, payloads)
		ps[i] = payload
		got, err := Unmarshal(joinSections(full[len(Magic)], tags, ps))
		if err != nil {
			return
		}
		checkDecoded(t, got)
	})
}

func TestSectionSplitRoundTrip(t *testing.T) {
	full, err := Marshal(testFile(t), true)
	if err != nil {
		t.Fatal(err)
	}
	tags, payloads := splitSections(full)
	if !bytes.Equal(joinSections(full[len(Magic)], tags, payloads), full) {
		t.Fatal("split/join does not reproduce the file")
	}
}
