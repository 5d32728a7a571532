package passes_test

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/cryptflow-go/cryptflow/frontend/onnx"
	"github.com/cryptflow-go/cryptflow/golden"
	"github.com/cryptflow-go/cryptflow/internal/dataset"
	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/passes"
	"github.com/cryptflow-go/cryptflow/sciir"
)

// pinnedPrograms are the SHA-256 sums of the program files (sciir.Marshal with the weights, the
// pass log lines as metadata) that Compile made for the cases of TestProgramsPinned before the
// pass driver was rewritten (commit de88ef4). A change to the driver must not change a program:
// a sum that moves means the compiler's output moved, and that needs a reason of its own.
var pinnedPrograms = map[string]string{
	"mnist-small/default":            "03e7df79d4798de3f091c8ff62316b348441ecfcd0672cd708921f00f8bec1c5",
	"mnist-small/autotune":           "0cae4d383198d4bb243c0c602bb852e14520e4193e33b358720c5b02e0a9bb08",
	"mnist-small/auto-wan":           "1954c32e9e8983c65bef34f08037e0c8a5afa72f011dc60bc2066882f310e033",
	"mnist-small/pinned-nopeep":      "9f900841f662b857194d48544e2d9e3ae1594f49dbb0aaa3bfe674d35c246d35",
	"mnist-small/keep-softmax-no-bn": "70be8c16c19f1575c0a753f1085867b7787874cf056d97bbb53d85b5334bef39",
	"minionn/default":                "d29e9dbeab9554959215057bfcd78b6207d601d838bd0a61f1f4d6179746789f",
	"minionn/autotune-auto":          "4925dc73f5fe44ee8576cdc3ee199c4e625b54e76e54d949be3283e5a1c3658b",
	"random-cnn/autotune":            "caafd8f584fa8c1529da2a7f66c81b645924bd7cbb5838ae7bbd6c51915598e4",
	"mobile-se/default":              "91813b5abff7c5eeb3c067edeea656fb71458447045a5672e2ff0ee0b0816d1d",
	"mobile-se/autotune-pinned-bits": "f0d7195072e8af6244e372334a9ceb903ef43c77909c55fe114fdbce169642d1",
	"imagenet-blocks/default":        "5be78f0f06ea048f47c86851385daf06054f38492a4750e319e5114ae17d8831",
}

// randomSamples makes n deterministic unlabelled inputs for g.
func randomSamples(g *ir.Graph, n int, seed uint64) []dataset.Sample {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	size := g.Inputs[0].Shape.Size()
	out := make([]dataset.Sample, n)
	for i := range out {
		x := make([]float32, size)
		for j := range x {
			x[j] = 2*rng.Float32() - 1
		}
		out[i] = dataset.Sample{Name: "random", Input: x, Label: -1}
	}
	return out
}

// TestProgramsPinned compiles the bundled MNIST model and a few golden networks under several
// option sets and compares the program files with the sums pinned before the driver rewrite.
func TestProgramsPinned(t *testing.T) {
	mnist, err := onnx.Load(filepath.Join(testenv.RepoRoot(t), "testdata", "mnist-small", "model.onnx"), onnx.Options{Batch: 1})
	if err != nil {
		t.Fatal(err)
	}
	ds, err := dataset.Load(filepath.Join(testenv.RepoRoot(t), "testdata", "mnist-small", "inputs"), mnist.Inputs[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	graph := func(g *ir.Graph, err error) *ir.Graph {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	minionn := graph(golden.MiniONN(3, 1))
	random := graph(golden.RandomCNN(11))
	mobile := graph(golden.MobileSE(5))
	blocks := graph(golden.ImageNetBlocks(2, 8))

	type tc struct {
		name string
		g    *ir.Graph
		opts func(o *passes.Options)
	}
	cases := []tc{
		{"mnist-small/default", mnist, func(o *passes.Options) {}},
		{"mnist-small/autotune", mnist, func(o *passes.Options) { o.Samples, o.Scales = ds.Samples, []int{8, 10, 12} }},
		{"mnist-small/auto-wan", mnist, func(o *passes.Options) { o.Backend, o.Net = "auto", "wan" }},
		{"mnist-small/pinned-nopeep", mnist, func(o *passes.Options) {
			o.Bits, o.Scale, o.Disable = 37, 9, []string{"peephole-*"}
		}},
		{"mnist-small/keep-softmax-no-bn", mnist, func(o *passes.Options) {
			o.KeepSoftmax, o.Disable = true, []string{"fold-batchnorm", "peephole-trunc-nonneg"}
		}},
		{"minionn/default", minionn, func(o *passes.Options) {}},
		{"minionn/autotune-auto", minionn, func(o *passes.Options) {
			o.Samples, o.Scales, o.Backend = randomSamples(minionn, 3, 1), []int{9, 11}, "auto"
		}},
		{"random-cnn/autotune", random, func(o *passes.Options) {
			o.Samples, o.Scales = randomSamples(random, 4, 2), []int{6, 8, 10}
		}},
		{"mobile-se/default", mobile, func(o *passes.Options) {}},
		{"mobile-se/autotune-pinned-bits", mobile, func(o *passes.Options) {
			o.Samples, o.Bits, o.Scales = randomSamples(mobile, 4, 3), 44, []int{8, 10}
		}},
		{"imagenet-blocks/default", blocks, func(o *passes.Options) {}},
	}
	got := map[string]string{}
	for _, c := range cases {
		opts := passes.DefaultOptions()
		opts.Check = true
		c.opts(&opts)
		p, rep, err := passes.Compile(c.g, opts)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		f := &sciir.File{Program: p, Backend: opts.Backend, Meta: sciir.Meta{Passes: rep.Lines()}}
		b, err := sciir.Marshal(f, true)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		sum := sha256.Sum256(b)
		got[c.name] = hex.EncodeToString(sum[:])
		if want := pinnedPrograms[c.name]; got[c.name] != want {
			t.Errorf("%s: program file sha256 %s, pinned %s", c.name, got[c.name], want)
		}
	}
	if t.Failed() {
		for _, c := range cases {
			t.Logf("\t%q: %q,", c.name, got[c.name])
		}
	}
}
