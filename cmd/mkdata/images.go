package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/cryptflow-go/cryptflow/internal/input"
	"github.com/cryptflow-go/cryptflow/sciir"
)

const imagesHelp = `Usage: mkdata images --in DIR --out DIR --size WxH [--channels 1|3] [--layout NCHW|NHWC]
         [--resize-shorter N] [--center-crop WxH] [--pixel-scale K] [--mean M,M,M] [--std S,S,S]
         [--resize bilinear|nearest] [--synsets FILE]

Exports a folder of PNG/JPEG images with one subfolder per class (--in DIR/CLASS/*.png|jpg|jpeg;
other files are skipped). Classes are numbered in sorted subfolder-name order, as athosc
--validate numbers them; with --synsets, by the line of their subfolder's name in FILE instead:
an ImageNet LOC_synset_mapping.txt-style list, line k = class k, "n01440764 tench, Tinca tinca"
(the ID, then an optional description), so that synset folders n01440764/ ... get the indices
a 1000-class ImageNet model uses. Writes into --out DIR:
  NNNNN.npy    float32, shape [1,C,H,W] (NCHW, the default) or [1,H,W,C] (NHWC), C = --channels;
               numbered in class order, then file-name order within a class
  labels.txt   "NNNNN.npy LABEL" per line
  classes.txt  the class names in index order: the subfolder names, or with --synsets each
               line's description (its ID when it has none)

Each image is preprocessed as athosc and scirun do for a program compiled with the same flags
(input.Apply): converted to grey (--channels 1) or RGB; with --resize-shorter N resized so its
shorter side is N pixels (aspect ratio kept, torchvision Resize(N)); with --center-crop WxH cut
to its centre (torchvision CenterCrop); resized to --size WxH (a no-op if already that size);
then each value is (pixel*K - mean[c]) / std[c], pixel 0..255. Resizing is bilinear with
half-pixel centres and no antialiasing. ImageNet models usually take --size 224x224
--resize-shorter 256 --center-crop 224x224 --mean 0.485,0.456,0.406 --std 0.229,0.224,0.225.

Flags:
`

func runImages(args []string, stdout io.Writer) error {
	const cmd = "images"
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	in := fs.String("in", "", "input `folder` with one subfolder of images per class")
	out := fs.String("out", "", "output `folder` (created if missing)")
	size := fs.String("size", "", "final image size `WxH` (width x height, as athosc --image-size); required")
	channels := fs.Int("channels", 3, "`1` (grey) or 3 (RGB)")
	layout := fs.String("layout", "NCHW", "`NCHW` or NHWC")
	shorter := fs.Int("resize-shorter", 0, "first resize so the shorter side is `N` pixels (0 = no)")
	crop := fs.String("center-crop", "", "then cut out the centre `WxH`")
	pixelScale := fs.Float64("pixel-scale", 1.0/255, "multiply pixel values (0..255) by `K` first")
	meanFlag := fs.String("mean", "", "per-channel `means` to subtract after scaling (one value, or one per channel)")
	stdFlag := fs.String("std", "", "per-channel `stds` to divide by (one value, or one per channel)")
	resize := fs.String("resize", "bilinear", "resize filter: `bilinear` or nearest")
	synsets := fs.String("synsets", "", "class list `file`: line k is \"ID [description]\" for class k")
	pos, err := parseFlags(fs, imagesHelp, args, stdout)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 0:
		return usagef(cmd, "unexpected arguments %q", pos)
	case *in == "":
		return usagef(cmd, "--in is required")
	case *out == "":
		return usagef(cmd, "--out is required")
	case *size == "":
		return usagef(cmd, "--size WxH is required (the model input's width and height)")
	case *channels != 1 && *channels != 3:
		return usagef(cmd, "--channels must be 1 or 3, not %d", *channels)
	}
	if err := checkLayout(cmd, *layout); err != nil {
		return err
	}
	p := &sciir.Preprocess{Channels: *channels, Layout: *layout, Scale: *pixelScale, Resize: *resize, ResizeShorter: *shorter}
	if p.Width, p.Height, err = parseWxH(*size); err != nil {
		return usagef(cmd, "--size: %v", err)
	}
	if *crop != "" {
		if p.CropWidth, p.CropHeight, err = parseWxH(*crop); err != nil {
			return usagef(cmd, "--center-crop: %v", err)
		}
	}
	if p.Mean, err = parseChannelValues(*meanFlag, *channels, 0); err != nil {
		return usagef(cmd, "--mean: %v", err)
	}
	if p.Std, err = parseChannelValues(*stdFlag, *channels, 1); err != nil {
		return usagef(cmd, "--std: %v", err)
	}
	if err := p.Check(); err != nil {
		return usagef(cmd, "%v", err)
	}

	dirs, err := classDirs(*in)
	if err != nil {
		return err
	}
	classes := dirs
	index := map[string]int{}
	for i, d := range dirs {
		index[d] = i
	}
	if *synsets != "" {
		ids, names, err := readSynsets(*synsets)
		if err != nil {
			return err
		}
		classes, index = names, map[string]int{}
		for i, id := range ids {
			index[id] = i
		}
		for _, d := range dirs {
			if _, ok := index[d]; !ok {
				return fmt.Errorf("class folder %s is not listed in %s (%d classes, %s to %s)", filepath.Join(*in, d), *synsets, len(ids), ids[0], ids[len(ids)-1])
			}
		}
		slices.SortFunc(dirs, func(a, b string) int { return index[a] - index[b] })
	}
	// List every class's images before preprocessing any.
	files := make([][]string, len(dirs))
	for i, d := range dirs {
		entries, err := os.ReadDir(filepath.Join(*in, d))
		if err != nil {
			return fmt.Errorf("reading class folder: %w", err)
		}
		for _, e := range entries {
			if !e.IsDir() && input.IsImage(e.Name()) {
				files[i] = append(files[i], e.Name())
			}
		}
		if len(files[i]) == 0 {
			return fmt.Errorf("class folder %s holds no PNG or JPEG images", filepath.Join(*in, d))
		}
	}

	w, err := newSetWriter(*out)
	if err != nil {
		return err
	}
	shape := p.Shape()
	for i, d := range dirs {
		for _, name := range files[i] {
			x, err := input.LoadImage(p, filepath.Join(*in, d, name))
			if err != nil {
				return err
			}
			if err := w.add(w.n, shape, x, index[d]); err != nil {
				return err
			}
		}
	}
	if err := w.finish(classes); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %d images of %d classes (%v %s), labels.txt and classes.txt (%d names) to %s\n",
		w.n, len(dirs), shape, *layout, len(classes), *out)
	return nil
}

// classDirs lists the subfolders of dir (hidden ones skipped) in sorted order.
func classDirs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("--in: %w", err)
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			dirs = append(dirs, e.Name())
		}
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("--in %s has no class subfolders: put each class's images in a subfolder named after it (DIR/cat/*.jpg, DIR/dog/*.jpg, or ImageNet synsets DIR/n01440764/...)", dir)
	}
	slices.Sort(dirs)
	return dirs, nil
}

// readSynsets reads a class list of "ID [description]" lines (LOC_synset_mapping.txt): line k is
// class k. It returns the IDs and, per class, the description or else the ID. Blank lines are an
// error, since they would shift every later index.
func readSynsets(path string) (ids, names []string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("--synsets: %w", err)
	}
	defer f.Close()
	seen := map[string]int{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			return nil, nil, fmt.Errorf("%s:%d: blank line (line k must name class k-1)", path, line)
		}
		id, desc, _ := strings.Cut(text, " ")
		id, desc = strings.TrimSpace(id), strings.TrimSpace(desc)
		if prev, dup := seen[id]; dup {
			return nil, nil, fmt.Errorf("%s:%d: %s is already class %d (line %d)", path, line, id, prev, prev+1)
		}
		seen[id] = len(ids)
		ids = append(ids, id)
		if desc == "" {
			desc = id
		}
		names = append(names, desc)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("--synsets %s: %w", path, err)
	}
	if len(ids) == 0 {
		return nil, nil, fmt.Errorf("--synsets %s is empty", path)
	}
	return ids, names, nil
}

// parseWxH parses "WxH" (e.g. 224x224) into positive width and height.
func parseWxH(s string) (int, int, error) {
	ws, hs, ok := strings.Cut(strings.ToLower(strings.TrimSpace(s)), "x")
	w, err1 := strconv.Atoi(ws)
	h, err2 := strconv.Atoi(hs)
	if !ok || err1 != nil || err2 != nil || w < 1 || h < 1 {
		return 0, 0, errors.New(strconv.Quote(s) + " is not WxH (width x height, e.g. 224x224)")
	}
	return w, h, nil
}
