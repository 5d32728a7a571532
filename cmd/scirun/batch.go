package main

// Batches: --input DIR/ (every .npy or image file in it, with an optional labels.txt) or a
// batched .npy ([B, ...input shape without its leading 1]) runs many inferences in one session;
// --output DIR/ writes one NAME.npy per input; a summary gives the throughput and, with labels,
// the accuracy.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/atomicfile"
	"github.com/cryptflow-go/cryptflow/internal/cli"
	"github.com/cryptflow-go/cryptflow/internal/input"
	"github.com/cryptflow-go/cryptflow/internal/npy"
	"github.com/cryptflow-go/cryptflow/internal/serve"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/sciir"
	"github.com/cryptflow-go/cryptflow/vm"
)

// labelsFile is the optional file of a folder input that gives each input's class: `FILE LABEL`
// per line (blank lines and #-comments allowed), as for athosc --validate.
const labelsFile = "labels.txt"

// classesFile is the class-name list (one per line, in index order) that mkdata writes beside
// labels.txt; a folder input may hold it, and scirun ignores it.
const classesFile = "classes.txt"

// item is one input of a run.
type item struct {
	name  string // for printing: the file name, or FILE[i] for an element of a batched .npy
	stem  string // NAME of the NAME.npy that --output DIR/ writes for it
	x     []float32
	label int // the class from labels.txt, -1 when unknown
}

// inputs is what --input names: one input, or a batch of them.
type inputs struct {
	items    []item
	batch    bool // a folder or a batched .npy (even of one input)
	labelled bool // every item has a label
}

// readInputs reads --input path for a program input of shape want: a folder, a batched .npy,
// or one file (see docs/usage.md, "Batches").
func readInputs(ctx context.Context, path string, want []int, prep *sciir.Preprocess, classes []string) (*inputs, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return readFolder(ctx, path, want, prep, classes)
	}
	stem := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	if input.IsImage(path) {
		x, err := input.Read(path, want, prep)
		if err != nil {
			return nil, fmt.Errorf("input: %w", err)
		}
		return &inputs{items: []item{{name: path, stem: stem, x: x, label: -1}}}, nil
	}
	// The shape is checked from the header, before the data is read.
	a, err := npy.ReadFileChecked(ctx, path, func(shape []int) error {
		if _, ok := batchSize(shape, want); ok {
			return nil
		}
		return input.CheckShape(shape, want)
	})
	if err != nil && strings.Contains(err.Error(), "does not fit the input") && len(want) > 0 && want[0] == 1 {
		dims := make([]string, len(want))
		dims[0] = "B"
		for i, d := range want[1:] {
			dims[i+1] = strconv.Itoa(d)
		}
		return nil, fmt.Errorf("input: %w; nor is it a batch of such inputs (shape [%s])", err, strings.Join(dims, ","))
	}
	if err != nil {
		return nil, fmt.Errorf("input: %w", err)
	}
	x, err := a.Float32()
	if err != nil {
		return nil, fmt.Errorf("input: %s: %w", path, err)
	}
	if input.CheckShape(a.Shape, want) == nil {
		return &inputs{items: []item{{name: path, stem: stem, x: x, label: -1}}}, nil
	}
	b, _ := batchSize(a.Shape, want) // the header check admitted the input or a batch
	n := len(x) / b
	in := &inputs{batch: true}
	for i := range b {
		in.items = append(in.items, item{name: fmt.Sprintf("%s[%d]", filepath.Base(path), i), stem: fmt.Sprintf("%05d", i), x: x[i*n : (i+1)*n], label: -1})
	}
	return in, nil
}

// batchSize reports whether an array of shape got is a batch of inputs of shape want: want
// begins with a 1-dimension (the model's batch of one) and got is [B, ...] with the rest fitting
// want without it (input.CheckShape).
func batchSize(got, want []int) (int, bool) {
	if len(want) == 0 || want[0] != 1 || len(got) < 1 || got[0] < 1 {
		return 0, false
	}
	if input.CheckShape(got[1:], want[1:]) != nil {
		return 0, false
	}
	return got[0], true
}

// readFolder reads every .npy or PNG/JPEG file of dir, in sorted order, and labels.txt if there
// (whose labels are class indices or names of the program's classes).
// Anything else in the folder (subfolders, other files, .npy arrays mixed with images) is an
// error naming it, so that a mistaken folder does not run half of what it holds.
func readFolder(ctx context.Context, dir string, want []int, prep *sciir.Preprocess, classes []string) (*inputs, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("input folder: %w", err)
	}
	const accepted = "an input folder holds .npy arrays or PNG/JPEG images (not both) and an optional " + labelsFile + " (and " + classesFile + ", ignored)"
	var files []string
	var npys, images, hasLabels = "", "", false
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasPrefix(name, "."):
			continue
		case e.IsDir():
			return nil, fmt.Errorf("input folder %s holds the folder %s: %s (the class-subfolder layout of athosc --validate is not read by scirun: give the images with a %s)",
				dir, name, accepted, labelsFile)
		case name == labelsFile:
			hasLabels = true
			continue
		case name == classesFile:
			continue
		case strings.EqualFold(filepath.Ext(name), ".npy"):
			if npys == "" {
				npys = name
			}
		case input.IsImage(name):
			if images == "" {
				images = name
			}
		default:
			return nil, fmt.Errorf("input folder %s holds %s, which is neither a .npy array nor a PNG/JPEG image: %s", dir, name, accepted)
		}
		files = append(files, name)
	}
	switch {
	case npys != "" && images != "":
		return nil, fmt.Errorf("input folder %s mixes .npy arrays (%s, ...) and images (%s, ...): %s", dir, npys, images, accepted)
	case len(files) == 0:
		return nil, fmt.Errorf("input folder %s holds no .npy arrays or PNG/JPEG images", dir)
	}
	slices.Sort(files)
	var labels map[string]int
	if hasLabels {
		if labels, err = input.ReadLabelsNamed(filepath.Join(dir, labelsFile), classes); err != nil {
			return nil, err
		}
		for name := range labels {
			if !slices.Contains(files, name) {
				return nil, fmt.Errorf("%s names %s, which is not an input in %s", filepath.Join(dir, labelsFile), name, dir)
			}
		}
	}
	stems := map[string]string{}
	for _, name := range files {
		stem := strings.TrimSuffix(name, filepath.Ext(name))
		if other, dup := stems[stem]; dup {
			return nil, fmt.Errorf("input folder %s holds %s and %s, whose outputs would both be %s.npy: rename one", dir, other, name, stem)
		}
		stems[stem] = name
	}
	in := &inputs{batch: true, labelled: labels != nil}
	for _, name := range files {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("input folder %s: %w", dir, err)
		}
		stem := strings.TrimSuffix(name, filepath.Ext(name))
		// Only regular files are read (a named pipe is refused at once), and a .npy's shape is
		// checked from its header before its data is read.
		x, err := input.Read(filepath.Join(dir, name), want, prep)
		if err != nil {
			return nil, fmt.Errorf("input: %w", err)
		}
		it := item{name: name, stem: stem, x: x, label: -1}
		if labels != nil {
			l, ok := labels[name]
			if !ok {
				return nil, fmt.Errorf("%s has no label for %s: label every input, or remove the file", filepath.Join(dir, labelsFile), name)
			}
			it.label = l
		}
		in.items = append(in.items, it)
	}
	return in, nil
}

// outputDir reports whether --output names a folder: it ends with a path separator or is an
// existing folder.
func outputDir(path string) bool {
	if path == "" {
		return false
	}
	if strings.HasSuffix(path, "/") || strings.HasSuffix(path, string(os.PathSeparator)) {
		return true
	}
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// batchRun is --input read and encoded: the items and their encoded inputs (one slice of program
// inputs per item).
type batchRun struct {
	*inputs
	encoded [][]ring.Tensor
}

// loadInputs reads and encodes --input, checking every value against the range the program was
// validated on (see checkRange), the labels against the program's classes, and --output against
// the kind of input. It runs before any connection is made.
func (c *config) loadInputs(ctx context.Context, f *sciir.File, e *env) (*batchRun, error) {
	p := f.Program
	if len(p.Inputs) != 1 {
		return nil, fmt.Errorf("the program has %d inputs; scirun takes one --input", len(p.Inputs))
	}
	r, err := p.Ring()
	if err != nil {
		return nil, err
	}
	in := p.Tensors[p.Inputs[0].Tensor]
	ins, err := readInputs(ctx, c.input, in.Shape, f.Meta.Preprocess, classNames(f))
	if err != nil {
		return nil, err
	}
	if ins.batch && c.output != "" && !outputDir(c.output) {
		return nil, fmt.Errorf("--output %s names one file, but --input %s is a batch of %d inputs: give a folder (--output DIR/) to write one NAME.npy per input",
			c.output, c.input, len(ins.items))
	}
	if ins.labelled && len(p.Outputs) == 1 {
		shape := p.Tensors[p.Outputs[0].Tensor].Shape
		if rows, d := classRows(shape, shape.Size()); rows == 1 {
			for _, it := range ins.items {
				if it.label >= d {
					return nil, fmt.Errorf("%s has label %d for %s, but the program has %d classes (0..%d): labels must be zero-based class indices of this model",
						labelsFile, it.label, it.name, d, d-1)
				}
			}
		}
	}
	b := &batchRun{inputs: ins}
	var warned []string
	for i, it := range ins.items {
		if msg := checkRange(it.x, f.Meta.InputRange); msg != "" {
			if c.strict {
				return nil, fmt.Errorf("input %s: %s (--strict)", it.name, msg)
			}
			warned = append(warned, it.name+": "+msg)
		}
		// A quantized model's client quantizes its float input as the model's QuantizeLinear
		// does (and a float16 input is rounded to float16), as the program records.
		f.Meta.PrepareInput(p.Inputs[0].Name, it.x)
		enc, err := r.EncodeTensor(in.Shape, it.x, in.Scale)
		if err != nil {
			return nil, fmt.Errorf("input %s: %w", it.name, err)
		}
		b.encoded = append(b.encoded, []ring.Tensor{enc})
		ins.items[i].x = nil // encoded: the floats are no longer needed
	}
	if len(warned) > 0 {
		more := ""
		if len(warned) > 1 {
			more = fmt.Sprintf(" (and %d more of the %d inputs)", len(warned)-1, len(ins.items))
		}
		fmt.Fprintf(e.stderr, "scirun: warning: input %s%s; results may be wrong (--strict makes this an error)\n", warned[0], more)
	}
	return b, nil
}

// emitter keeps the results of a run as they finish: for a batch, each input's NAME.npy is
// written under --output DIR/ and then its line printed, before the next inference starts, so
// that an interrupted or failed batch keeps everything that finished; summary then gives the
// throughput and the accuracy of what ran.
type emitter struct {
	c       *config
	b       *batchRun
	f       *sciir.File
	e       *env
	r       ring.Ring
	classes []string
	bar     *cli.Progress // the run's progress: erased before a result is printed, told each one
	// done counts the results kept; correct and judged the labelled predictions among them.
	done, correct, judged int
}

func (c *config) newEmitter(b *batchRun, f *sciir.File, e *env) (*emitter, error) {
	r, err := f.Program.Ring() // Z_2^l, or the fhe mode's Z_n
	if err != nil {
		return nil, err
	}
	return &emitter{c: c, b: b, f: f, e: e, r: r, classes: classNames(f)}, nil
}

// keep prints and writes the outputs of item k (the single-input output as before, or for a
// batch one line per output and DIR/NAME.npy). After a signal (the drain channel closed) it
// stops the run, so that the next inference does not start.
func (em *emitter) keep(k int, outs []vm.Output) error {
	c, e, it := em.c, em.e, em.b.items[k]
	em.bar.Erase()
	defer em.bar.Items(k+1, len(em.b.items))
	defer func() {
		if c.stop == nil {
			return
		}
		select {
		case <-e.drain:
			c.stop()
		default:
		}
	}()
	if !em.b.batch && !outputDir(c.output) {
		if err := c.emit(outs, em.f, e); err != nil {
			return err
		}
		em.done++
		return nil
	}
	var revealed []vm.Output
	for _, o := range outs {
		if o.Revealed {
			revealed = append(revealed, o)
		}
	}
	if c.output != "" {
		if len(revealed) != 1 {
			return fmt.Errorf("--output: %d outputs are revealed to this party, want 1", len(revealed))
		}
		if err := c.writeOutput(filepath.Join(c.output, it.stem+".npy"), em.r, revealed[0], em.f.Meta.Dequantization(revealed[0].Name)); err != nil {
			return err
		}
	}
	for _, o := range revealed {
		named := o
		named.Name = it.name + " " + o.Name
		if c.set["top"] || !em.b.batch {
			printTop(e.stdout, em.r, named, c.top, em.classes, em.f.Meta.Dequantization(o.Name))
			continue
		}
		pred := printTopLine(e.stdout, em.r, named, em.classes, it.label, em.f.Meta.Dequantization(o.Name))
		if it.label >= 0 && len(revealed) == 1 && pred >= 0 {
			em.judged++
			if pred == it.label {
				em.correct++
			}
		}
	}
	em.done++
	return nil
}

// summary prints a batch's summary: with rep, the session's report, or elapsed, the clear
// run's time; an interrupted or failed batch says how many of its inferences finished and where
// their outputs are.
func (em *emitter) summary(rep *serve.Report, elapsed time.Duration) {
	if !em.b.batch {
		return
	}
	w, n, total := em.e.stdout, em.done, len(em.b.items)
	if n < total {
		where := ""
		if em.c.output != "" && n > 0 {
			where = fmt.Sprintf("; their outputs are in %s", em.c.output)
		}
		fmt.Fprintf(w, "batch: stopped after %d of %d inferences%s\n", n, total, where)
	} else {
		switch {
		case rep != nil && rep.PerInference != nil:
			fmt.Fprintf(w, "batch: %d inferences in one session in %s (handshake %s and set-up %s once, %s sent and %s received): %s and %s sent, %s received per inference; %.2f inferences/s\n",
				n, fmtSeconds(rep.TotalMS), fmtSeconds(rep.HandshakeMS), fmtSeconds(rep.SetupMS),
				serve.FormatBytes(rep.Handshake.BytesSent+rep.Setup.BytesSent), serve.FormatBytes(rep.Handshake.BytesRecv+rep.Setup.BytesRecv),
				fmtSeconds(rep.PerInferenceMS), serve.FormatBytes(rep.PerInference.BytesSent), serve.FormatBytes(rep.PerInference.BytesRecv), rep.InferencesPerSec)
		case elapsed > 0:
			fmt.Fprintf(w, "batch: %d inferences in the clear in %s: %s per inference; %.2f inferences/s\n",
				n, elapsed.Round(time.Millisecond), (elapsed / time.Duration(n)).Round(time.Microsecond), float64(n)/elapsed.Seconds())
		}
	}
	switch {
	case !em.b.labelled || n == 0:
	case em.judged == n:
		of := ""
		if n < total {
			of = fmt.Sprintf(" (the %d that finished)", n)
		}
		fmt.Fprintf(w, "accuracy: %d/%d (%.2f%%) against %s%s\n", em.correct, n, 100*float64(em.correct)/float64(n), labelsFile, of)
	default:
		fmt.Fprintf(w, "accuracy: not measured: the program's revealed output is not one row of class scores\n")
	}
}

// stopped wraps the error that ended a run after some of its results were kept, saying where
// they are.
func (em *emitter) stopped(err error) error {
	if err == nil || em.done == 0 || !em.b.batch || em.c.output == "" {
		return err
	}
	return fmt.Errorf("%w (the outputs of the %d inferences that finished are in %s)", err, em.done, em.c.output)
}

// printTopLine prints one line for output o: its top class and score, and with a label whether
// it matches. It returns the top class, or -1 when o is not one row of class scores.
func printTopLine(w io.Writer, r ring.Ring, o vm.Output, classes []string, label int, dq *sciir.Quant) int {
	vals := decodeOutput(r, o, dq)
	rows, d := classRows(o.Value.Shape, len(vals))
	name := classLabel(classes, d)
	pred := -1
	for row := range rows {
		top := r.ArgMax(o.Value.Data[row*d : (row+1)*d])
		prefix := o.Name
		if rows > 1 {
			prefix = fmt.Sprintf("%s[%d]", o.Name, row)
		}
		verdict := ""
		if rows == 1 {
			pred = top
			if label >= 0 {
				verdict = fmt.Sprintf(", label %s: wrong", name(label))
				if top == label {
					verdict = ", label: right"
				}
			}
		}
		fmt.Fprintf(w, "%s: top class %s (%.4g)%s\n", prefix, name(top), vals[row*d+top], verdict)
	}
	return pred
}

// writeOutput writes one revealed output to path (decoded, or raw with --raw), creating its
// folder.
func (c *config) writeOutput(path string, r ring.Ring, o vm.Output, dq *sciir.Quant) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	err := atomicfile.Write(path, 0o644, func(w io.Writer) error {
		if c.raw {
			return npy.WriteInt64(w, o.Value.Shape, r.SignedValues(o.Value))
		}
		return npy.WriteFloat32(w, o.Value.Shape, decodeOutput(r, o, dq))
	})
	if err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// checkOutputDir refuses an --output folder that is the --input folder (NAME.npy outputs would
// overwrite NAME.npy inputs).
func (c *config) checkOutputDir() error {
	if c.input == "" {
		return nil
	}
	same, err := atomicfile.SameFile(filepath.Clean(c.output), filepath.Clean(c.input))
	if err != nil {
		return fmt.Errorf("--output: %w", err)
	}
	if same {
		return errors.New("--output: the output folder is the input folder, where NAME.npy outputs would overwrite the inputs: choose another folder")
	}
	return nil
}

func fmtSeconds(ms float64) string {
	return (time.Duration(ms * float64(time.Millisecond))).Round(time.Millisecond).String()
}
