// Package compile turns a model file into the contents of a program file: it loads the model,
// reads the validation data and the class names, runs the compiler's passes and fills the
// program's metadata (source hash, input/output quantization, preprocessing, classes, the
// autotuning record). The athosc command and the Go API (package cryptflow) both compile
// through it, so that a program compiled either way is the same program; what each prints or
// returns around it is its own. Programs outside this module should use package cryptflow, whose
// options are stable; this package's follow athosc's flags.
package compile

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/cryptflow-go/cryptflow/frontend"
	"github.com/cryptflow-go/cryptflow/internal/dataset"
	"github.com/cryptflow-go/cryptflow/internal/input"
	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/passes"
	"github.com/cryptflow-go/cryptflow/sciir"
)

// Model is a loaded model file.
type Model struct {
	Path   string
	SHA256 string // of the file's bytes, hex
	Graph  *ir.Graph
}

// Load reads a model file of either format (ONNX or TensorFlow frozen GraphDef, told apart by
// its bytes) with the front-end options (cut, batch).
func Load(path string, fo frontend.Options) (*Model, error) {
	g, err := frontend.Load(path, fo)
	if err != nil {
		return nil, err
	}
	sum, err := fileSHA256(path)
	if err != nil {
		return nil, fmt.Errorf("hash model: %w", err)
	}
	return &Model{Path: path, SHA256: sum, Graph: g}, nil
}

// Classes is the number of classes of the model's first output: its last dimension after
// dropping trailing 1-dimensions ([1,1000,1,1] has 1000); 0 when the model has no output.
func (m *Model) Classes() int {
	if len(m.Graph.Outputs) == 0 {
		return 0
	}
	v := m.Graph.Values[m.Graph.Outputs[0]]
	if v == nil {
		return 0
	}
	return ClassCount(v.Shape)
}

// ClassCount is the number of classes of a classifier output of the given shape: its last
// dimension after dropping trailing 1-dimensions.
func ClassCount(shape []int) int {
	for i := len(shape) - 1; i >= 0; i-- {
		if shape[i] != 1 {
			return shape[i]
		}
	}
	return 1
}

// Options say how to compile. Passes carries the compiler's own options (ring, scale sweep,
// backend, link, checks, dumps, progress); Program fills its Samples from the validation data.
type Options struct {
	Passes passes.Options
	// Backend recorded in the program (scirun's default): auto, sciot, scihe, sci3 or fhe.
	Backend string
	// Compiler and Name are recorded in the program's metadata.
	Compiler, Name string
	// Validate is a validation folder (dataset.Load's formats); Samples are validation inputs
	// given directly, added after the folder's. Limit keeps the first Limit of all (0: all).
	Validate string
	Samples  []dataset.Sample
	Limit    int
	// Preprocess is an image folder's preprocessing; nil takes input.DefaultPreprocess for a
	// 4-D input.
	Preprocess *sciir.Preprocess
	// Classes name the output classes (class k is Classes[k]); ClassesFrom says where they came
	// from in error messages (e.g. "--classes names.txt"). Without them the validation folder's
	// classes.txt or class subfolders name them.
	Classes     []string
	ClassesFrom string
	// Log receives the notes a user should read (validation summary, the class-folder rule);
	// Warn the warnings. Either may be nil.
	Log, Warn io.Writer
}

// Result is a compiled program and what was learnt on the way.
type Result struct {
	File    *sciir.File
	Report  *passes.Report
	Dataset *dataset.Dataset // the validation data read, or nil
}

// Program compiles m as o says.
func Program(m *Model, o Options) (*Result, error) {
	g := m.Graph
	name := o.Name
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(m.Path), filepath.Ext(m.Path))
	}
	meta := sciir.Meta{Compiler: o.Compiler, Source: filepath.Base(m.Path), SourceSHA256: m.SHA256, Name: name}
	if o.Backend == "auto" {
		meta.Net = o.Passes.Net // scirun's --ot auto follows it
	}
	// Declared input types and a quantized model's input quantization and output
	// dequantization: scirun applies them to the client's data and the revealed output.
	meta.Inputs, meta.Outputs = sciir.IOInfo(g)
	outClasses := m.Classes()
	if len(o.Classes) > 0 {
		from := o.ClassesFrom
		if from == "" {
			from = "class names"
		}
		for i, c := range o.Classes {
			if strings.TrimSpace(c) == "" || strings.ContainsAny(c, "\r\n") {
				return nil, fmt.Errorf("%s: class %d: %q: want a non-empty name on one line", from, i, c)
			}
		}
		if outClasses > 1 && len(o.Classes) != outClasses {
			return nil, fmt.Errorf("%s names %d classes, but the model's output %s has %d classes: give one name per output class, in index order",
				from, len(o.Classes), g.Outputs[0], outClasses)
		}
		meta.Classes = append([]string(nil), o.Classes...)
	}
	po := o.Passes
	po.Backend = o.Backend
	var ds *dataset.Dataset
	var samples []dataset.Sample
	if o.Validate != "" {
		if len(g.Inputs) != 1 {
			return nil, fmt.Errorf("validation needs a model with one input; %s has %d", m.Path, len(g.Inputs))
		}
		prep := o.Preprocess
		if prep == nil && len(g.Inputs[0].Shape) == 4 {
			var err error
			if prep, err = input.DefaultPreprocess(g.Inputs[0].Shape, "NCHW"); err != nil {
				return nil, err
			}
		}
		var err error
		if ds, err = dataset.LoadWith(o.Validate, g.Inputs[0], prep, meta.Classes); err != nil {
			return nil, err
		}
		recordClasses(ds, o, outClasses, &meta)
		if ds.Labelled && outClasses > 1 {
			if err := ds.CheckLabels(outClasses); err != nil {
				return nil, fmt.Errorf("validation %s: %w", o.Validate, err)
			}
		}
		samples = ds.Samples
	}
	if len(o.Samples) > 0 && len(g.Inputs) != 1 {
		return nil, fmt.Errorf("validation needs a model with one input; %s has %d", m.Path, len(g.Inputs))
	}
	samples = append(samples, o.Samples...)
	if o.Limit > 0 && o.Limit < len(samples) {
		samples = samples[:o.Limit]
	}
	if ds != nil {
		ds.Samples = samples
	}
	if len(samples) > 0 {
		lo, hi, err := inputRange(samples)
		if err != nil {
			return nil, err
		}
		meta.InputRange = &sciir.Range{Min: float64(lo), Max: float64(hi)}
		if o.Log != nil && ds != nil {
			fmt.Fprintf(o.Log, "validation: %d inputs from %s, %s; input values in [%.4g, %.4g]\n", len(samples), o.Validate, ds.Layout(), lo, hi)
		}
		po.Samples = samples
	}
	prog, rep, err := passes.Compile(g, po)
	if err != nil {
		return nil, err
	}
	meta.Passes = rep.Lines()
	if rep.Peephole != nil {
		for _, l := range rep.Peephole.Lines() {
			meta.Passes = append(meta.Passes, "peepholes: "+strings.TrimSpace(l))
		}
	}
	if ds != nil && (rep.Tune != nil || passes.Quantized(g)) {
		// An image folder's preprocessing is the client's, tuned on or not (a quantized model
		// is not tuned, but scirun still preprocesses and quantizes images as it does).
		meta.Preprocess = ds.Preprocess
	}
	if rep.Tune != nil {
		meta.Autotune = tuneMeta(rep.Tune, o, filepath.Base(o.Validate))
	}
	return &Result{File: &sciir.File{Program: prog, Backend: o.Backend, Meta: meta}, Report: rep, Dataset: ds}, nil
}

// recordClasses records the validation folder's class names in meta (unless given), notes the
// rule that numbers class subfolders, and warns when the folder's classes are not the model's
// output classes.
func recordClasses(ds *dataset.Dataset, o Options, outClasses int, meta *sciir.Meta) {
	logf := func(w io.Writer, format string, args ...any) {
		if w != nil {
			fmt.Fprintf(w, format, args...)
		}
	}
	if ds.Format == "images" {
		n := len(ds.Preprocess.ClassDirs)
		logf(o.Log, "classes: the %d subfolders of %s in sorted name order are classes 0..%d: %s (renaming or adding a folder renumbers them: recompile after)\n",
			n, o.Validate, n-1, numbered(ds.Preprocess.ClassDirs))
		if outClasses > 1 && n != outClasses {
			logf(o.Warn, "warning: %s has %d class subfolders, but the model's output has %d classes: folder k is taken for class k, so the labels are likely wrong (one subfolder per output class, named so that they sort in class order)\n",
				o.Validate, n, outClasses)
		}
	}
	if meta.Classes != nil || len(ds.Classes) == 0 {
		return
	}
	if ds.ClassSource == dataset.ClassesFile {
		logf(o.Log, "classes: %d names from %s\n", len(ds.Classes), filepath.Join(o.Validate, dataset.ClassesFile))
		if outClasses > 1 && len(ds.Classes) != outClasses {
			logf(o.Warn, "warning: %s names %d classes, but the model's output has %d: the names are not recorded (give --classes FILE)\n",
				filepath.Join(o.Validate, dataset.ClassesFile), len(ds.Classes), outClasses)
			return
		}
	}
	meta.Classes = ds.Classes
}

// numbered lists names as "0 a, 1 b, ..." (the first and last few of a long list).
func numbered(names []string) string {
	var parts []string
	for k, n := range names {
		if len(names) > 12 && k >= 5 && k < len(names)-3 {
			if k == 5 {
				parts = append(parts, "…")
			}
			continue
		}
		parts = append(parts, fmt.Sprintf("%d %s", k, n))
	}
	return strings.Join(parts, ", ")
}

// inputRange is the range of the samples' input values.
func inputRange(samples []dataset.Sample) (lo, hi float32, err error) {
	first := true
	for _, s := range samples {
		for _, v := range s.Input {
			if first {
				lo, hi, first = v, v, false
			}
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	if first {
		return 0, 0, errors.New("the validation samples are empty")
	}
	return lo, hi, nil
}

// tuneMeta is the autotuning record the program keeps.
func tuneMeta(res *passes.TuneResult, o Options, dir string) *sciir.Autotune {
	a := &sciir.Autotune{Validation: dir, Samples: res.Samples, Labelled: res.Labelled, Headroom: res.Headroom,
		Bits: res.Bits, Scale: res.Scale, FloatAcc: res.FloatAccuracy, Reason: res.Reason}
	var pinned []string
	if o.Passes.Bits != 0 {
		pinned = append(pinned, "bitwidth")
	}
	if o.Passes.Scale >= 0 {
		pinned = append(pinned, "scale")
	}
	a.Pinned = strings.Join(pinned, ",")
	for _, r := range res.Rows {
		a.Rows = append(a.Rows, sciir.TuneRecord{Bits: r.Bits, Scale: r.Scale, Accuracy: r.Accuracy,
			Agreement: r.Agreement, BitsUsed: r.BitsUsed, Overflow: r.Overflow})
	}
	return a
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
