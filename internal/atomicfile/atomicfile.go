// Package atomicfile writes output files so that they are never lost or half-written: the
// new content goes to a temporary file in the destination's folder, which is synced and then
// renamed over the destination (an atomic replacement on POSIX file systems), so a failure
// part-way leaves the previous file intact. It also checks, before a long job, that an output
// path is not one of the job's inputs and that its folder is writable.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Write creates or replaces path with what write writes, atomically: write gets a temporary
// file in path's folder; when it returns nil the file is synced, given mode perm, and renamed
// to path (and the folder synced, where the system allows). When write or any step fails, the
// temporary file is removed, path is left as it was, and the error says which step failed.
func Write(path string, perm os.FileMode, write func(w io.Writer) error) (err error) {
	if fi, statErr := os.Stat(path); statErr == nil && fi.IsDir() {
		return fmt.Errorf("writing %s: it is a folder", path)
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if err := write(f); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("writing %s: setting its mode: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("writing %s: syncing: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing %s: replacing it: %w", path, err)
	}
	syncDir(dir)
	return nil
}

// WriteFile is Write of data.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return Write(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// syncDir makes a rename in dir durable where the system supports syncing a folder (best
// effort: some systems and file systems refuse it, and the rename itself is already atomic).
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}

// SameFile reports whether paths a and b name the same file. When both exist it compares the
// files themselves (os.SameFile: hard links and symbolic links count as the same file);
// otherwise it compares the absolute, cleaned paths with the existing part of their folders'
// symbolic links resolved, so that "out.bin" and "./dir/../out.bin" are the same even before
// the file exists.
func SameFile(a, b string) (bool, error) {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	if errA == nil && errB == nil {
		return os.SameFile(fa, fb), nil
	}
	for _, e := range []error{errA, errB} {
		if e != nil && !errors.Is(e, os.ErrNotExist) {
			return false, e
		}
	}
	ca, err := canonical(a)
	if err != nil {
		return false, err
	}
	cb, err := canonical(b)
	if err != nil {
		return false, err
	}
	return ca == cb, nil
}

// canonical is p made absolute and clean, with its folder's symbolic links resolved as far as
// the folder exists.
func canonical(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	dir, rest := filepath.Dir(abs), filepath.Base(abs)
	for {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(r, rest), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
	}
}

// CheckNotInput fails when output is the same file as one of inputs (empty inputs are
// skipped), naming both, so that a job never overwrites what it reads.
func CheckNotInput(output string, inputs ...string) error {
	for _, in := range inputs {
		if in == "" {
			continue
		}
		same, err := SameFile(output, in)
		if err != nil {
			return fmt.Errorf("checking output %s against input %s: %w", output, in, err)
		}
		if same {
			return fmt.Errorf("output %s is the input %s: choose another output name", output, in)
		}
	}
	return nil
}

// CheckNotInside fails when output is the folder dir or lies anywhere under it (symbolic links
// resolved as far as the paths exist), naming both, so that a job never writes into the folder
// of inputs it reads (an athosc -o val/labels.txt with --validate val).
func CheckNotInside(output, dir string) error {
	if dir == "" {
		return nil
	}
	co, err := canonical(output)
	if err != nil {
		return err
	}
	cd, err := canonical(dir)
	if err != nil {
		return err
	}
	if co == cd || strings.HasPrefix(co, cd+string(filepath.Separator)) {
		return fmt.Errorf("output %s is inside the input folder %s, whose files it could overwrite: choose an output outside it", output, dir)
	}
	return nil
}

// CheckWritable reports, before a long job, whether path can be written: it must not be a
// folder, and a temporary file can be created (and is removed at once) in its folder — which
// is what Write needs. It does not create or change path.
func CheckWritable(path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("output %s is a folder", path)
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".check-*")
	if err != nil {
		return fmt.Errorf("output %s cannot be written: %w", path, err)
	}
	name := f.Name()
	cerr := f.Close()
	rerr := os.Remove(name)
	if err := errors.Join(cerr, rerr); err != nil {
		return fmt.Errorf("output %s: checking its folder: %w", path, err)
	}
	return nil
}
