package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// CIFAR-10 binary format: per record one label byte, then 1024 red, 1024 green and 1024 blue
// bytes, each plane 32x32 row-major (https://www.cs.toronto.edu/~kriz/cifar.html).
const (
	cifarSide   = 32
	cifarPixels = 3 * cifarSide * cifarSide
	cifarRecord = 1 + cifarPixels
)

// cifarClasses are the CIFAR-10 class names in label order (batches.meta.txt).
var cifarClasses = []string{"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"}

const cifarHelp = `Usage: mkdata cifar10 --batch FILE[,FILE...] --out DIR [--from N] [--count N]
         [--scale 1|255] [--layout NCHW|NHWC] [--mean M,M,M --std S,S,S]

Exports images from..from+count-1 of CIFAR-10 binary batches (the "binary version":
data_batch_1.bin .. data_batch_5.bin, test_batch.bin; each record is 1 label byte and 3072 pixel
bytes, 1024 red then 1024 green then 1024 blue, 32x32 row-major). Several batches are read as
one sequence in the order given (--batch may be repeated, and files may also follow the flags).
Writes into --out DIR:
  NNNNN.npy    float32, shape [1,3,32,32] (NCHW, the default) or [1,32,32,3] (NHWC), channels
               R,G,B; NNNNN is the image's index in the sequence, zero-padded to five digits
  labels.txt   "NNNNN.npy LABEL" per line (LABEL 0..9)
  classes.txt  the ten class names in index order: ` + "airplane, automobile, bird, cat, deer, dog, frog, horse, ship, truck" + `

Each value is (pixel*k - mean[c]) / std[c] in float32 arithmetic, with k = 1/255 for --scale 1
(the default) and k = 1 for --scale 255, pixel the raw byte 0..255 - the same numbers as
torchvision's ToTensor() then Normalize(mean, std) for --scale 1. --mean and --std take one value
or one per channel (R,G,B) in the units after scaling; the default is 0 and 1 (no normalisation).

Flags:
`

func runCIFAR10(args []string, stdout io.Writer) error {
	const cmd = "cifar10"
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	var batches listFlag
	fs.Var(&batches, "batch", "CIFAR-10 binary batch `file`s, comma-separated or repeated")
	from := fs.Int("from", 0, "index of the first image to export (in the sequence of all batches)")
	count := fs.Int("count", -1, "number of images to export; -1 exports all from --from on")
	scale := fs.Int("scale", 1, "pixel range before --mean/--std: `1` (0..1) or 255 (0..255)")
	layout := fs.String("layout", "NCHW", "`NCHW` writes [1,3,32,32], NHWC writes [1,32,32,3]")
	meanFlag := fs.String("mean", "", "per-channel `means` to subtract (R,G,B, or one for all)")
	stdFlag := fs.String("std", "", "per-channel `stds` to divide by (R,G,B, or one for all)")
	out := fs.String("out", "", "output `folder` (created if missing)")
	pos, err := parseFlags(fs, cifarHelp, args, stdout)
	if err != nil {
		return err
	}
	batches = append(batches, pos...)
	switch {
	case len(batches) == 0:
		return usagef(cmd, "--batch is required (e.g. --batch cifar-10-batches-bin/test_batch.bin)")
	case *out == "":
		return usagef(cmd, "--out is required")
	case *scale != 1 && *scale != 255:
		return usagef(cmd, "--scale must be 1 or 255, not %d", *scale)
	}
	if err := checkLayout(cmd, *layout); err != nil {
		return err
	}
	mean, err := parseChannelValues(*meanFlag, 3, 0)
	if err != nil {
		return usagef(cmd, "--mean: %v", err)
	}
	std, err := parseChannelValues(*stdFlag, 3, 1)
	if err != nil {
		return usagef(cmd, "--std: %v", err)
	}
	for c, s := range std {
		if s == 0 {
			return usagef(cmd, "--std: channel %d is 0", c)
		}
	}

	// Check every file's size before reading any data.
	type batch struct {
		path  string
		first int // index of its first record in the sequence
		n     int
	}
	var bs []batch
	total := 0
	for _, p := range batches {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		if fi.IsDir() || fi.Size() == 0 || fi.Size()%cifarRecord != 0 {
			return fmt.Errorf("%s: %d bytes is not a whole number of %d-byte CIFAR-10 records (1 label byte + 3072 pixel bytes); is it a binary batch (not the python pickle)?",
				p, fi.Size(), cifarRecord)
		}
		n := int(fi.Size() / cifarRecord)
		bs = append(bs, batch{p, total, n})
		total += n
	}
	source := bs[0].path
	if len(bs) > 1 {
		source = fmt.Sprintf("the %d batches", len(bs))
	}
	n, err := checkRange(cmd, *from, *count, total, source)
	if err != nil {
		return err
	}
	w, err := newSetWriter(*out)
	if err != nil {
		return err
	}
	k := float32(1)
	if *scale == 1 {
		k = 1.0 / 255
	}
	rec := make([]byte, cifarRecord)
	x := make([]float32, cifarPixels)
	shape := imageShape(*layout, 3, cifarSide, cifarSide)
	for _, b := range bs {
		lo, hi := max(*from, b.first), min(*from+n, b.first+b.n)
		if lo >= hi {
			continue
		}
		if err := func() error {
			f, err := os.Open(b.path)
			if err != nil {
				return err
			}
			defer f.Close()
			for i := lo; i < hi; i++ {
				if _, err := f.ReadAt(rec, int64(i-b.first)*cifarRecord); err != nil {
					return fmt.Errorf("%s: record %d: %w", b.path, i-b.first, err)
				}
				label := int(rec[0])
				if label >= len(cifarClasses) {
					return fmt.Errorf("%s: record %d has label %d; CIFAR-10 labels are 0..9 (a CIFAR-100 file has 2 label bytes per record)", b.path, i-b.first, label)
				}
				cifarImage(x, rec[1:], *layout, k, mean, std)
				if err := w.add(i, shape, x, label); err != nil {
					return err
				}
			}
			return nil
		}(); err != nil {
			return err
		}
	}
	if err := w.finish(cifarClasses); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %d images [%d, %d) of %s (%s, scale %d), labels.txt and classes.txt to %s\n",
		n, *from, *from+n, source, *layout, *scale, *out)
	return nil
}

// cifarImage converts one record's planar R,G,B bytes to dst in layout: (pixel*k - mean[c]) / std[c].
func cifarImage(dst []float32, px []byte, layout string, k float32, mean, std []float64) {
	const hw = cifarSide * cifarSide
	for c := range 3 {
		m, s := float32(mean[c]), float32(std[c])
		for i := range hw {
			v := (float32(px[c*hw+i])*k - m) / s
			if layout == "NHWC" {
				dst[i*3+c] = v
			} else {
				dst[c*hw+i] = v
			}
		}
	}
}

// listFlag is a repeatable flag of comma-separated values.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(s string) error {
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			*l = append(*l, v)
		}
	}
	return nil
}

// parseChannelValues parses a comma-separated list of n finite numbers, or one number meaning
// all n; "" gives n copies of def.
func parseChannelValues(s string, n int, def float64) ([]float64, error) {
	out := make([]float64, n)
	if s == "" {
		for i := range out {
			out[i] = def
		}
		return out, nil
	}
	parts := strings.Split(s, ",")
	if len(parts) != 1 && len(parts) != n {
		return nil, fmt.Errorf("%q has %d values, want 1 or %d", s, len(parts), n)
	}
	for i := range out {
		p := parts[0]
		if len(parts) == n {
			p = parts[i]
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || v != v || v > 1e300 || v < -1e300 {
			return nil, fmt.Errorf("%q is not a finite number", p)
		}
		out[i] = v
	}
	return out, nil
}
