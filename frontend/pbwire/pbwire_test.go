package pbwire

import (
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

func TestEachAndAccessors(t *testing.T) {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(1<<63|5))
	b = protowire.AppendTag(b, 2, protowire.Fixed32Type)
	b = protowire.AppendFixed32(b, math.Float32bits(1.5))
	b = protowire.AppendTag(b, 3, protowire.BytesType)
	b = protowire.AppendBytes(b, []byte("name"))
	var packed []byte
	for _, v := range []uint64{1, 300, 1 << 40} {
		packed = protowire.AppendVarint(packed, v)
	}
	b = protowire.AppendTag(b, 4, protowire.BytesType)
	b = protowire.AppendBytes(b, packed)
	b = protowire.AppendTag(b, 5, protowire.VarintType) // unpacked repeated
	b = protowire.AppendVarint(b, 7)
	var fl []byte
	for _, v := range []float32{0.25, -2} {
		fl = protowire.AppendFixed32(fl, math.Float32bits(v))
	}
	b = protowire.AppendTag(b, 6, protowire.BytesType)
	b = protowire.AppendBytes(b, fl)

	var ints []uint64
	var i64 []int64
	var fs []float32
	err := Each(b, func(f Field) error {
		var err error
		switch f.Num {
		case 1:
			var u uint64
			var s int64
			if u, err = f.Uint64("u"); err == nil && u != 1<<63|5 {
				t.Errorf("uint64 %d", u)
			}
			if s, err = f.Int64("s"); err == nil && s != -(1<<63)+5 {
				t.Errorf("int64 %d", s)
			}
		case 2:
			var v float32
			if v, err = f.Float32("f"); err == nil && v != 1.5 {
				t.Errorf("float32 %g", v)
			}
		case 3:
			var s string
			if s, err = f.Text("name"); err == nil && s != "name" {
				t.Errorf("text %q", s)
			}
		case 4:
			ints, err = f.AppendVarints(ints, "ints")
			if err == nil {
				i64, err = f.AppendInt64s(i64, "ints")
			}
		case 5:
			ints, err = f.AppendVarints(ints, "ints")
		case 6:
			fs, err = f.AppendFloat32s(fs, "floats")
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ints) != 4 || ints[1] != 300 || ints[3] != 7 || len(i64) != 3 || i64[2] != 1<<40 || len(fs) != 2 || fs[1] != -2 {
		t.Errorf("repeated: %v %v %v", ints, i64, fs)
	}
}

func TestMalformed(t *testing.T) {
	for name, b := range map[string][]byte{
		"bad tag":          {0x80},
		"truncated bytes":  protowire.AppendTag(nil, 3, protowire.BytesType),
		"length too large": append(protowire.AppendTag(nil, 3, protowire.BytesType), 10, 'a'),
	} {
		if err := Each(b, func(Field) error { return nil }); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// A field of the wrong wire type names what was expected.
	b := protowire.AppendVarint(protowire.AppendTag(nil, 9, protowire.VarintType), 1)
	err := Each(b, func(f Field) error { _, err := f.Float32("scale"); return err })
	if err == nil || !strings.Contains(err.Error(), "scale") {
		t.Errorf("wrong type: %v", err)
	}
	// Packed floats of a length that is not a multiple of 4.
	b = protowire.AppendBytes(protowire.AppendTag(nil, 6, protowire.BytesType), []byte{1, 2, 3})
	err = Each(b, func(f Field) error { _, err := f.AppendFloat32s(nil, "floats"); return err })
	if err == nil {
		t.Error("packed floats of 3 bytes accepted")
	}
}
