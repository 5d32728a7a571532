// Package input reads the inputs of a model or a program: .npy arrays, and PNG or JPEG images
// preprocessed as a program records (sciir.Preprocess). It is the one loader behind
// `athosc eval`, `athosc --validate` and `scirun --input`, so the three accept the same files
// under one shape rule (see CheckShape).
package input

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cryptflow-go/cryptflow/internal/npy"
	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/sciir"
)

// ShapeRule states the shape rule in words, for error messages and --help.
const ShapeRule = "an array must have the input's shape, or that shape without its leading 1-dimensions"

// CheckShape reports whether an array of shape got may feed an input of shape want: got must equal
// want, or want with some of its leading 1-dimensions dropped (a [28,28] or [1,28,28] array for a
// [1,1,28,28] input). Other arrays with the same number of elements are refused: a reshape that
// happens to fit (a [784] vector for an image, or NHWC data for an NCHW input) is a likely mistake.
func CheckShape(got, want []int) error {
	for drop := 0; drop <= len(want); drop++ {
		if slices.Equal(got, want[drop:]) {
			return nil
		}
		if drop < len(want) && want[drop] != 1 {
			break
		}
	}
	return fmt.Errorf("array of shape %v does not fit the input %v (%s)", ir.Shape(got), ir.Shape(want), ShapeRule)
}

// IsImage reports whether name has a PNG or JPEG extension.
func IsImage(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".png", ".jpg", ".jpeg":
		return true
	}
	return false
}

// ReadNpy reads a .npy array for an input of shape want (see CheckShape) as float32 values in the
// input's element order.
//
// The shape is checked from the file's header, before its data is read: a batched array (or
// any array of another shape) is refused without being read.
func ReadNpy(path string, want []int) ([]float32, error) {
	a, err := npy.ReadFileChecked(context.Background(), path, func(shape []int) error { return CheckShape(shape, want) })
	if err != nil {
		return nil, err
	}
	x, err := a.Float32()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return x, nil
}

// Read reads one input of shape want from path: a PNG or JPEG image, preprocessed as prep says
// (prep must be non-nil and make inputs of shape want), or a .npy array (see ReadNpy).
func Read(path string, want []int, prep *sciir.Preprocess) ([]float32, error) {
	if !IsImage(path) {
		return ReadNpy(path, want)
	}
	if prep == nil {
		return nil, fmt.Errorf("%s is an image, but no image preprocessing is recorded for this input; give a .npy array", path)
	}
	if got := prep.Shape(); !slices.Equal(got, want) {
		return nil, fmt.Errorf("%s: the recorded preprocessing makes inputs of shape %v, the input is %v", path, ir.Shape(got), ir.Shape(want))
	}
	return LoadImage(prep, path)
}
