package main

import (
	"bytes"
	"errors"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/frontend"
)

// TestNotAModel: athosc given an image, a .npy array, a program or a text file says what the
// file is and what athosc takes, instead of a protobuf decoding error.
func TestNotAModel(t *testing.T) {
	dir := t.TempDir()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, 4, 4))); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"cat.png":    b.Bytes(),
		"x.npy":      []byte("\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }"),
		"m.sciir":    []byte("\x89SCI\r\n\x1a\n\x00\x00"),
		"labels.txt": []byte("00000.npy 7\n00001.npy 2\n"),
		"model.pt":   []byte("PK\x03\x04\x14\x00\x00\x00"),
		"photo.jpeg": []byte("\xff\xd8\xff\xe0\x00\x10JFIF"),
	}
	wants := map[string]string{
		"cat.png":    "is a PNG image, not a model: athosc takes an ONNX model (.onnx) or a TensorFlow frozen graph (.pb); images go in a --validate DIR",
		"x.npy":      "is a .npy array, not a model",
		"m.sciir":    "is a .sciir program (already compiled), not a model",
		"labels.txt": "is a text file, not a model",
		"model.pt":   "is a zip archive (a PyTorch .pt/.pth checkpoint?), not a model",
		"photo.jpeg": "is a JPEG image, not a model",
	}
	for name, data := range files {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := parseCompile([]string{path, "-o", filepath.Join(dir, "out.sciir")})
		if err != nil {
			t.Fatal(err)
		}
		err = compileModel(cfg, &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), path+" "+wants[name]) || !errors.Is(err, frontend.ErrNotAModel) ||
			strings.Contains(err.Error(), "proto") {
			t.Errorf("%s: %v\nwant %q", name, err, wants[name])
		}
	}
	// A real model is still a model.
	model, _ := smallModel(t)
	data, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	if what, _ := frontend.NotAModel(data); what != "" {
		t.Errorf("the MNIST model is taken for %s", what)
	}
}
