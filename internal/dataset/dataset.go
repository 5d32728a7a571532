// Package dataset loads a validation folder for the autotuner: *.npy inputs with an optional
// labels.txt, or one subfolder of PNG/JPEG images per class, preprocessed as the program records.
package dataset

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cryptflow-go/cryptflow/internal/input"
	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/sciir"
)

// Sample is one validation input and its class label (-1 when unknown).
type Sample struct {
	Name  string
	Input []float32 // the model input's values, row-major in the input's shape
	Label int
}

// Dataset is a loaded validation folder.
type Dataset struct {
	Samples    []Sample
	Labelled   bool              // every sample has a label
	Format     string            // "npy" or "images"
	Preprocess *sciir.Preprocess // for "images": how each image became an input
	// Classes names the classes (Classes[k] is class k), from ClassSource: "folders" (the
	// sorted class subfolders), "classes.txt" (beside labels.txt) or "given" (LoadWith's).
	Classes     []string
	ClassSource string
}

// ClassesFile is the class-name list beside labels.txt (one name per line, line k naming class
// k), as mkdata writes it.
const ClassesFile = "classes.txt"

// ErrValidationFormat is wrapped by the error for a folder in neither accepted format.
var ErrValidationFormat = errors.New("unrecognised validation folder")

// validationFormats describes the accepted folder layouts for error messages.
const validationFormats = "accepted formats: (a) NNNNN.npy input tensors plus an optional labels.txt with `file label` per line; " +
	"(b) one subfolder per class holding PNG or JPEG images (classes numbered in sorted folder-name order)"

// Load reads a validation folder for a model input: (a) *.npy files, each holding one
// input of the input's shape (or that shape without its leading batch dimension of 1), plus an
// optional labels.txt; or (b) one subfolder per class of PNG/JPEG images, preprocessed by prep
// (nil: sciir.DefaultPreprocess for the input's shape, NCHW). Anything else is an error saying
// which formats are accepted.
func Load(dir string, input ir.Value, prep *sciir.Preprocess) (*Dataset, error) {
	return LoadWith(dir, input, prep, nil)
}

// LoadWith is Load with the class names (athosc --classes), which also resolve class names in
// labels.txt; nil takes a classes.txt beside labels.txt (as mkdata writes it) when there is one.
func LoadWith(dir string, input ir.Value, prep *sciir.Preprocess, classes []string) (*Dataset, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("validation folder: %w", err)
	}
	var npys, subdirs []string
	for _, e := range entries {
		switch {
		case e.IsDir() && !strings.HasPrefix(e.Name(), "."):
			subdirs = append(subdirs, e.Name())
		case !e.IsDir() && strings.EqualFold(filepath.Ext(e.Name()), ".npy"):
			npys = append(npys, e.Name())
		}
	}
	slices.Sort(npys)
	slices.Sort(subdirs)
	switch {
	case len(npys) > 0 && len(subdirs) > 0:
		return nil, fmt.Errorf("%w %s: it holds both .npy files (%s, ...) and subfolders (%s, ...); a folder is either layout (a) or (b), not both; %s",
			ErrValidationFormat, dir, npys[0], subdirs[0], validationFormats)
	case len(npys) > 0:
		return loadNpyFolder(dir, npys, input, classes)
	case len(subdirs) > 0:
		ds, err := loadImageFolder(dir, subdirs, input, prep)
		if err == nil && classes != nil {
			ds.Classes, ds.ClassSource = classes, "given"
		}
		return ds, err
	}
	return nil, fmt.Errorf("%w %s: no .npy files and no class subfolders; %s", ErrValidationFormat, dir, validationFormats)
}

func loadNpyFolder(dir string, files []string, in ir.Value, classes []string) (*Dataset, error) {
	source := "given"
	if classes == nil {
		path := filepath.Join(dir, ClassesFile)
		if _, err := os.Stat(path); err == nil {
			if classes, err = input.ReadClasses(path); err != nil {
				return nil, fmt.Errorf("validation folder: %w", err)
			}
			source = ClassesFile
		}
	}
	labels, err := input.ReadLabelsNamed(filepath.Join(dir, "labels.txt"), classes)
	if err != nil {
		return nil, err
	}
	ds := &Dataset{Format: "npy", Labelled: labels != nil}
	if classes != nil {
		ds.Classes, ds.ClassSource = classes, source
	}
	want := in.Shape
	for _, name := range files {
		x, err := input.ReadNpy(filepath.Join(dir, name), want)
		if err != nil {
			return nil, fmt.Errorf("validation input for model input %q: %w", in.Name, err)
		}
		s := Sample{Name: name, Input: x, Label: -1}
		if labels != nil {
			l, ok := labels[name]
			if !ok {
				return nil, fmt.Errorf("validation folder %s: labels.txt has no label for %s", dir, name)
			}
			s.Label = l
		}
		ds.Samples = append(ds.Samples, s)
	}
	if labels != nil && len(labels) != len(files) {
		for name := range labels {
			if !slices.Contains(files, name) {
				return nil, fmt.Errorf("validation folder %s: labels.txt names %s, which is not a .npy file there", dir, name)
			}
		}
	}
	return ds, nil
}

func loadImageFolder(dir string, classes []string, in ir.Value, prep *sciir.Preprocess) (*Dataset, error) {
	if prep == nil {
		var err error
		if prep, err = input.DefaultPreprocess(in.Shape, "NCHW"); err != nil {
			return nil, fmt.Errorf("validation folder %s: %w", dir, err)
		}
	}
	if err := prep.Check(); err != nil {
		return nil, err
	}
	if got := ir.Shape(prep.Shape()); !got.Equal(in.Shape) {
		return nil, fmt.Errorf("validation folder %s: preprocessing makes inputs of shape %v, the model input %q is %v",
			dir, got, in.Name, in.Shape)
	}
	p := *prep
	p.ClassDirs = classes
	ds := &Dataset{Format: "images", Labelled: true, Preprocess: &p, Classes: classes, ClassSource: "folders"}
	for label, class := range classes {
		entries, err := os.ReadDir(filepath.Join(dir, class))
		if err != nil {
			return nil, fmt.Errorf("validation folder: %w", err)
		}
		n := 0
		for _, e := range entries {
			if e.IsDir() || !input.IsImage(e.Name()) {
				continue
			}
			path := filepath.Join(dir, class, e.Name())
			x, err := input.LoadImage(&p, path)
			if err != nil {
				return nil, fmt.Errorf("validation image: %w", err)
			}
			ds.Samples = append(ds.Samples, Sample{Name: filepath.Join(class, e.Name()), Input: x, Label: label})
			n++
		}
		if n == 0 {
			return nil, fmt.Errorf("%w %s: class subfolder %q holds no PNG or JPEG images; %s", ErrValidationFormat, dir, class, validationFormats)
		}
	}
	return ds, nil
}

// InputRange returns the smallest and largest input value over all samples.
func (ds *Dataset) InputRange() (lo, hi float32) {
	first := true
	for _, s := range ds.Samples {
		for _, v := range s.Input {
			if first || v < lo {
				lo = v
			}
			if first || v > hi {
				hi = v
			}
			first = false
		}
	}
	return lo, hi
}

// CheckLabels refuses labels outside 0..classes-1 (a labels.txt for another model, or one-based
// class numbers), naming the first such sample.
func (ds *Dataset) CheckLabels(classes int) error {
	for _, s := range ds.Samples {
		if s.Label >= classes {
			return fmt.Errorf("validation sample %s has label %d, but the model has %d classes (0..%d): labels must be zero-based class indices of this model",
				s.Name, s.Label, classes, classes-1)
		}
	}
	return nil
}

// Layout describes the folder layout that was read, for the compile report.
func (ds *Dataset) Layout() string {
	if ds.Format == "images" {
		n := 0
		if ds.Preprocess != nil {
			n = len(ds.Preprocess.ClassDirs)
		}
		return fmt.Sprintf("layout (b): PNG/JPEG images in %d class subfolders", n)
	}
	if ds.Labelled {
		return "layout (a): .npy inputs with labels.txt"
	}
	return "layout (a): .npy inputs, no labels.txt (accuracy cannot be measured; overflow is still checked)"
}
