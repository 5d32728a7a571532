package irtext

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// FuzzParseText checks that Parse never panics, that its errors carry a position, and that
// every text it accepts round-trips: print(parse(src)) parses to the same graph and prints the same.
func FuzzParseText(f *testing.F) {
	f.Add(mnistText)
	f.Add("graph \"g\" {\n}\n")
	f.Add("graph \"g\" {\n  input %x: f32[*]\n  value %x: none\n  %y, %\"z\\n\": i64[] = \"op\"(%x) {a=ints[], b=floats[1], c=nan(0x7fa00001), d=-inf, e=\"s\"} @n\n  output %y\n}\n")
	f.Add("graph \"g\" {\n  const %c: f32[2] = [\n    1e-45, -0.0\n  ]\n  const %d: f32[1] = elided \"sha256:00000000\"\n}\n")
	f.Add("graph \"g\" {\n  %y = Relu(%x) {a=[1, 2.5]}\n}")
	gg := graphGen{rand.New(rand.NewPCG(5, 6))}
	for range 8 {
		f.Add(Format(gg.graph()))
	}
	f.Fuzz(func(t *testing.T, src string) {
		g, err := Parse(src)
		if err != nil {
			var te *Error
			if !errors.As(err, &te) || te.Line < 1 || te.Column < 1 {
				t.Fatalf("error without a position: %v", err)
			}
			return
		}
		if err := CheckRoundTrip(g); err != nil {
			t.Fatalf("%v\nsource:\n%s", err, src)
		}
	})
}
