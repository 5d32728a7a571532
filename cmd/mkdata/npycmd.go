package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/cryptflow-go/cryptflow/internal/npy"
)

const npyHelp = `Usage: mkdata npy stack|reshape|slice|info [flags] FILE...

Edits NumPy .npy arrays (float32, float64, int32, int64 or uint8, C order, either byte order).
The element type is preserved; the output is little-endian, laid out as numpy.save writes it.
Every input's header (type, shape, and that the file size matches them) is checked before any
array data is read.

  mkdata npy stack -o OUT.npy FILE.npy... | DIR
        join arrays along the first axis: [1,1,28,28] x N gives [N,1,28,28] (the batched input
        scirun --input takes); with --new-axis add a new first axis instead: [28,28] x N gives
        [N,28,28]. A folder stands for its *.npy files in name order (00000.npy, 00001.npy, ...).
  mkdata npy reshape -o OUT.npy --shape D,D,... FILE.npy
        same data, new shape of the same number of elements; one D may be -1 (inferred)
  mkdata npy slice -o OUT.npy --from N [--count N] FILE.npy
        rows from..from+count-1 along the first axis, reading only their bytes: [N,...] gives
        [count,...]
  mkdata npy info FILE.npy...
        print each file's shape and element type

Run "mkdata npy COMMAND --help" for a command's flags.
`

func runNpy(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return usagef("npy", "name a command: stack, reshape, slice or info")
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, npyHelp)
		return flag.ErrHelp
	case "stack":
		return runNpyStack(args[1:], stdout)
	case "reshape":
		return runNpyReshape(args[1:], stdout)
	case "slice":
		return runNpySlice(args[1:], stdout)
	case "info":
		return runNpyInfo(args[1:], stdout)
	}
	return usagef("npy", "unknown command %q (want stack, reshape, slice or info)", args[0])
}

const npyStackHelp = `Usage: mkdata npy stack -o OUT.npy [--new-axis] FILE.npy... | DIR

Joins arrays of one element type into OUT.npy, in the order given. By default along the first
axis, as numpy.concatenate(axis=0): the first dimensions add up and the others must be equal, so
N files of shape [1,1,28,28] (as mkdata mnist writes them) give one [N,1,28,28] batch. With
--new-axis, as numpy.stack(axis=0): the arrays must have equal shapes and gain a new first axis
of length N. A folder argument stands for its *.npy files in name order (OUT.npy excluded).

Flags:
`

func runNpyStack(args []string, stdout io.Writer) error {
	const cmd = "npy stack"
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	out := fs.String("o", "", "output `file` (.npy)")
	newAxis := fs.Bool("new-axis", false, "add a new first axis (numpy.stack) instead of joining along the first axis")
	pos, err := parseFlags(fs, npyStackHelp, args, stdout)
	if err != nil {
		return err
	}
	if *out == "" {
		return usagef(cmd, "-o OUT.npy is required")
	}
	if len(pos) == 0 {
		return usagef(cmd, "give the .npy files to stack, or a folder of them")
	}
	var files []string
	for _, p := range pos {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			files = append(files, p)
			continue
		}
		names, err := filepath.Glob(filepath.Join(p, "*.npy"))
		if err != nil {
			return err
		}
		slices.Sort(names)
		n := 0
		for _, name := range names {
			if !sameFile(name, *out) {
				files = append(files, name)
				n++
			}
		}
		if n == 0 {
			return fmt.Errorf("folder %s holds no .npy files", p)
		}
	}

	// Headers first: types and shapes must fit together before any data is read.
	shapes := make([][]int, len(files))
	dtypes := make([]npy.DType, len(files))
	infos := make([]*npy.Info, len(files))
	for i, f := range files {
		info, err := npy.StatFile(f)
		if err != nil {
			return err
		}
		infos[i] = info
		shapes[i], dtypes[i] = info.Shape, info.DType
		if *newAxis {
			shapes[i] = append([]int{1}, info.Shape...)
		}
	}
	for i := range files {
		switch {
		case dtypes[i] != dtypes[0]:
			return fmt.Errorf("%s is %v but %s is %v: stack arrays of one element type", files[i], dtypes[i], files[0], dtypes[0])
		case len(shapes[i]) == 0:
			return fmt.Errorf("%s is a scalar (0-d) array: it has no first axis to join along (use --new-axis)", files[i])
		case !slices.Equal(shapes[i][1:], shapes[0][1:]):
			what := "only the first dimension may differ (or use --new-axis for arrays of equal shape)"
			if *newAxis {
				what = "with --new-axis the shapes must be equal"
			}
			return fmt.Errorf("%s has shape %v but %s has %v: %s", files[i], infos[i].Shape, files[0], infos[0].Shape, what)
		}
	}
	arrays := make([]*npy.Array, len(files))
	for i, f := range files {
		if arrays[i], err = npy.ReadFile(f); err != nil {
			return err
		}
	}
	var joined *npy.Array
	if *newAxis {
		joined, err = npy.Stack(arrays...)
	} else {
		joined, err = npy.Concat(arrays...)
	}
	if err != nil {
		return err
	}
	if err := npy.WriteFile(*out, joined); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: %d arrays joined, %v %v\n", *out, len(files), joined.DType, joined.Shape)
	return nil
}

func sameFile(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

const npyReshapeHelp = `Usage: mkdata npy reshape -o OUT.npy --shape D,D,... FILE.npy

Writes FILE.npy's elements, unchanged and in the same (C) order, as an array of the new shape:
e.g. --shape 1,784 turns a [1,1,28,28] image into the flat input of an MLP. The shape must hold
the same number of elements; one dimension may be -1 and is then inferred (--shape -1,784). An
empty --shape "" makes a scalar of a one-element array. OUT.npy may be FILE.npy.

Flags:
`

func runNpyReshape(args []string, stdout io.Writer) error {
	const cmd = "npy reshape"
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	out := fs.String("o", "", "output `file` (.npy); may be the input")
	shapeFlag := fs.String("shape", "", "the new shape, comma-separated `dims` (one may be -1)")
	pos, err := parseFlags(fs, npyReshapeHelp, args, stdout)
	if err != nil {
		return err
	}
	shapeSet := false
	fs.Visit(func(f *flag.Flag) { shapeSet = shapeSet || f.Name == "shape" })
	switch {
	case *out == "":
		return usagef(cmd, "-o OUT.npy is required")
	case !shapeSet:
		return usagef(cmd, "--shape is required (e.g. --shape 1,784)")
	case len(pos) != 1:
		return usagef(cmd, "give one input file, not %d", len(pos))
	}
	shape, err := parseShape(*shapeFlag)
	if err != nil {
		return usagef(cmd, "--shape: %v", err)
	}
	info, err := npy.StatFile(pos[0])
	if err != nil {
		return err
	}
	// Check the shape against the header before reading the data.
	if _, err := npy.ReshapeTo(info.Shape, shape); err != nil {
		return fmt.Errorf("%s: %w", pos[0], err)
	}
	a, err := npy.ReadFile(pos[0])
	if err != nil {
		return err
	}
	b, err := a.Reshape(shape)
	if err != nil {
		return fmt.Errorf("%s: %w", pos[0], err)
	}
	if err := npy.WriteFile(*out, b); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: %v %v (from %v)\n", *out, b.DType, b.Shape, a.Shape)
	return nil
}

func parseShape(s string) ([]int, error) {
	s = strings.Trim(strings.TrimSpace(s), "[]()")
	if s == "" {
		return []int{}, nil
	}
	var shape []int
	for _, p := range strings.Split(s, ",") {
		d, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || d < -1 {
			return nil, fmt.Errorf("%q is not a dimension (a non-negative integer, or -1)", p)
		}
		shape = append(shape, d)
	}
	return shape, nil
}

const npySliceHelp = `Usage: mkdata npy slice -o OUT.npy --from N [--count N] FILE.npy

Writes rows from..from+count-1 along the first axis of FILE.npy: a [100,3,32,32] batch with
--from 10 --count 5 gives [5,3,32,32]. Only those rows' bytes are read (after the header and
the file size are checked), so a slice of a large file is cheap. --count -1 (the default) takes
every row from --from on.

Flags:
`

func runNpySlice(args []string, stdout io.Writer) error {
	const cmd = "npy slice"
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	out := fs.String("o", "", "output `file` (.npy)")
	from := fs.Int("from", 0, "first row (index along the first axis)")
	count := fs.Int("count", -1, "number of rows; -1 takes all from --from on")
	pos, err := parseFlags(fs, npySliceHelp, args, stdout)
	if err != nil {
		return err
	}
	switch {
	case *out == "":
		return usagef(cmd, "-o OUT.npy is required")
	case len(pos) != 1:
		return usagef(cmd, "give one input file, not %d", len(pos))
	}
	info, err := npy.StatFile(pos[0])
	if err != nil {
		return err
	}
	if len(info.Shape) == 0 {
		return fmt.Errorf("%s is a scalar (0-d) array; it has no rows to slice", pos[0])
	}
	n, err := checkRange(cmd, *from, *count, info.Shape[0], pos[0]+" (rows of shape "+fmt.Sprint(info.Shape)+")")
	if err != nil {
		return err
	}
	a, err := npy.ReadFileRows(pos[0], *from, n)
	if err != nil {
		return err
	}
	if err := npy.WriteFile(*out, a); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: rows [%d, %d) of %s, %v %v\n", *out, *from, *from+n, pos[0], a.DType, a.Shape)
	return nil
}

const npyInfoHelp = `Usage: mkdata npy info FILE.npy...

Prints "FILE: DTYPE [SHAPE]" for each file, from its header (the file size is checked against
the header; the data is not read).

Flags:
`

func runNpyInfo(args []string, stdout io.Writer) error {
	const cmd = "npy info"
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	pos, err := parseFlags(fs, npyInfoHelp, args, stdout)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef(cmd, "give one or more .npy files")
	}
	for _, p := range pos {
		info, err := npy.StatFile(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: %v %v\n", p, info.DType, info.Shape)
	}
	return nil
}
