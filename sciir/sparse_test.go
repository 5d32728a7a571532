package sciir

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// sparseFile is the test program with its fc.w weight (3×16) replaced by a mostly zero tensor of
// the given non-zero positions and values.
func sparseFile(t testing.TB, pos []int, vals []int64) *File {
	f := testFile(t)
	for i := range f.Program.Weights {
		if f.Program.Weights[i].Name == "fc.w" {
			d := make([]int64, 48)
			for j, p := range pos {
				d[p] = vals[j]
			}
			f.Program.Weights[i].Data = d
		}
	}
	return f
}

// TestSparseWeights: a mostly zero weight tensor is written sparse (version 4, fewer bytes) and
// reads back equal, with edge values and positions; dense programs keep their older version;
// the client copy has the full copy's ID, also after being read and written again.
func TestSparseWeights(t *testing.T) {
	dense, err := Marshal(testFile(t), true)
	if err != nil {
		t.Fatal(err)
	}
	if v := binary.LittleEndian.Uint16(dense[8:]); v != 2 {
		t.Fatalf("dense program written as version %d, want 2", v)
	}
	r := rand.New(rand.NewPCG(1, 2))
	cases := [][]int{{0}, {47}, {0, 47}, {}, {3, 9, 30}}
	for _, pos := range cases {
		vals := make([]int64, len(pos))
		for j := range vals {
			vals[j] = []int64{math.MinInt64, math.MaxInt64, -1, 1, r.Int64N(1<<40) - 1<<39}[r.IntN(5)]
		}
		f := sparseFile(t, pos, vals)
		want := append([]int64(nil), f.Program.Weights[weightIndex(t, f, "fc.w")].Data...)
		full, err := Marshal(f, true)
		if err != nil {
			t.Fatal(err)
		}
		if v := binary.LittleEndian.Uint16(full[8:]); v != 4 {
			t.Errorf("%v: sparse program written as version %d, want 4", pos, v)
		}
		// A sparse tensor costs 8 + nnz·(4 + width) bytes instead of 48·width (+ the flag byte).
		g, err := Unmarshal(full)
		if err != nil {
			t.Fatalf("%v: %v", pos, err)
		}
		if got := g.Program.Weights[weightIndex(t, g, "fc.w")].Data; !reflect.DeepEqual(got, want) {
			t.Errorf("%v: read back %v, want %v", pos, got, want)
		}
		for i, w := range g.Program.Weights {
			if !reflect.DeepEqual(w.Data, f.Program.Weights[i].Data) {
				t.Errorf("%v: weight %s changed", pos, w.Name)
			}
		}
		if g.ID != f.ID || g.Version != 4 {
			t.Errorf("%v: ID %x version %d after reading, written %x", pos, g.ID[:4], g.Version, f.ID[:4])
		}
		client, err := Marshal(f, false)
		if err != nil {
			t.Fatal(err)
		}
		c, err := Unmarshal(client)
		if err != nil {
			t.Fatal(err)
		}
		if c.ID != f.ID {
			t.Errorf("%v: client copy ID %x, full %x", pos, c.ID[:4], f.ID[:4])
		}
		again, err := Marshal(c, false)
		if err != nil || !bytes.Equal(again, client) {
			t.Errorf("%v: the client copy written again differs (err %v)", pos, err)
		}
		if again, err := Marshal(g, true); err != nil || !bytes.Equal(again, full) {
			t.Errorf("%v: the full copy written again differs (err %v)", pos, err)
		}
	}
	// The size: 1 non-zero of 48 in an 8-byte tensor.
	f := sparseFile(t, []int{5}, []int64{math.MaxInt64})
	full, _ := Marshal(f, true)
	d := sparseFile(t, []int{5}, []int64{math.MaxInt64})
	for i := range d.Program.Weights {
		if d.Program.Weights[i].Name == "fc.w" {
			for j := range d.Program.Weights[i].Data {
				d.Program.Weights[i].Data[j] |= 1 << 50 // every element non-zero: dense
			}
		}
	}
	denseFull, _ := Marshal(d, true)
	if saved := len(denseFull) - len(full); saved != 48*8-(8+4+8) {
		t.Errorf("sparse tensor saves %d bytes, want %d", saved, 48*8-(8+4+8))
	}
}

func weightIndex(t testing.TB, f *File, name string) int {
	for i, w := range f.Program.Weights {
		if w.Name == name {
			return i
		}
	}
	t.Fatalf("no weight %s", name)
	return -1
}

// TestSparseWeightErrors: malformed sparse tensors are format errors, never panics, and a
// version 3 file may not hold one.
func TestSparseWeightErrors(t *testing.T) {
	f := sparseFile(t, []int{3, 9}, []int64{7, -7})
	full, err := Marshal(f, true)
	if err != nil {
		t.Fatal(err)
	}
	// Locate fc.w's entry: n = 48, the flag byte, nnz = 2, positions 3 and 9.
	entry := binary.LittleEndian.AppendUint64(nil, 48)
	entry = append(entry, sparseFlag|1)
	entry = binary.LittleEndian.AppendUint64(entry, 2)
	entry = binary.LittleEndian.AppendUint32(entry, 3)
	entry = binary.LittleEndian.AppendUint32(entry, 9)
	at := bytes.Index(full, entry)
	if at < 0 {
		t.Fatal("sparse entry not found: test is broken")
	}
	edit := func(name string, fn func(b []byte), want string) {
		t.Helper()
		b := bytes.Clone(full)
		fn(b)
		_, err := Unmarshal(rechecksum(b))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error containing %q", name, err, want)
		}
	}
	edit("descending", func(b []byte) { binary.LittleEndian.PutUint32(b[at+17:], 10) }, "positions must ascend")
	edit("repeated", func(b []byte) { binary.LittleEndian.PutUint32(b[at+21:], 3) }, "positions must ascend")
	edit("out of range", func(b []byte) { binary.LittleEndian.PutUint32(b[at+21:], 48) }, "positions must ascend")
	edit("zero value", func(b []byte) { b[at+25] = 0 }, "lists a zero")
	edit("too many", func(b []byte) { binary.LittleEndian.PutUint64(b[at+9:], 49) }, "non-zero values for 48 elements")
	edit("truncated", func(b []byte) { binary.LittleEndian.PutUint64(b[at+9:], 40) }, "truncated")
	edit("width", func(b []byte) { b[at+8] = sparseFlag | 9 }, "value width 9")
	// Version 3: the client copy with that version gives the ID the weights must carry.
	client, err := Marshal(f, false)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint16(client[8:], 3)
	c3, err := Unmarshal(client)
	if err != nil {
		t.Fatal(err)
	}
	edit("version 3", func(b []byte) {
		binary.LittleEndian.PutUint16(b[8:], 3)
		i := bytes.Index(b, f.ID[:])
		copy(b[i:], c3.ID[:])
	}, "sparse weights in a version 3 file")
}

// TestSparseOldVersionKept: a version 2 file whose weights are mostly zeros (written dense, as
// older builds did) keeps version 2 and its ID when read and written again; a new program with
// the same weights is written as version 4.
func TestSparseOldVersionKept(t *testing.T) {
	f := sparseFile(t, []int{7}, []int64{3})
	f.Version = 2 // as if read from a version 2 file
	old, err := Marshal(f, true)
	if err != nil {
		t.Fatal(err)
	}
	if v := binary.LittleEndian.Uint16(old[8:]); v != 2 {
		t.Fatalf("written as version %d, want 2", v)
	}
	g, err := Unmarshal(old)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Marshal(g, true)
	if err != nil || !bytes.Equal(again, old) || g.ID != f.ID {
		t.Errorf("a version 2 file written again differs (err %v)", err)
	}
	f.Version = 0
	if nw, _ := Marshal(f, true); binary.LittleEndian.Uint16(nw[8:]) != 4 || len(nw) >= len(old) {
		t.Errorf("a new program with sparse weights: version %d, %d bytes (dense: %d)", binary.LittleEndian.Uint16(nw[8:]), len(nw), len(old))
	}
}
