package main

import (
	"crypto/sha256"
	bin "encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"

	"github.com/cryptflow-go/cryptflow/protocols/dealer"
	"github.com/cryptflow-go/cryptflow/sciir"
)

// traceFile is a data party's file of the requests its first inference makes to the helper
// (--helper-traces DIR): read at the backend's set-up to deal the first inference at its start
// (dealer.Link.SetFirstTrace), written at the session's end when it was absent or stale.
type traceFile struct {
	path   string
	key    [32]byte
	loaded bool   // a matching trace was given to the link
	note   string // what happened to the file, for stderr ("" when it matched)
}

// sessionKey digests what a file recorded from a session depends on: a version string, the
// program's ID, the party, the stream count and this binary's build (module version, VCS
// revision and whether the tree was modified), so that a file of another binary is not used.
func sessionKey(version string, f *sciir.File, party, streams int) [32]byte {
	h := sha256.New()
	h.Write([]byte(version))
	h.Write(f.ID[:])
	h.Write(bin.LittleEndian.AppendUint64(nil, uint64(party)))
	h.Write(bin.LittleEndian.AppendUint64(nil, uint64(streams)))
	if bi, ok := debug.ReadBuildInfo(); ok {
		h.Write([]byte(bi.Main.Path + "@" + bi.Main.Version))
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" || s.Key == "vcs.modified" {
				h.Write([]byte(s.Key + "=" + s.Value))
			}
		}
	}
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// traceKeyVersion changes when the requests a program makes could change for another reason
// than the program, the party, the stream count or the binary (the key has those).
const traceKeyVersion = "cryptflow sci3 first-inference trace 1"

// newTraceFile names the trace of program f, data party `party` with `streams` extra streams in
// dir. The key digests the program's ID, the party, the stream count and this binary's build
// (module version, VCS revision and whether the tree was modified): the requests are a function
// of those, so a file of another binary is not used.
func newTraceFile(dir string, f *sciir.File, party, streams int) *traceFile {
	t := &traceFile{key: sessionKey(traceKeyVersion, f, party, streams)}
	t.path = filepath.Join(dir, fmt.Sprintf("%s-p%d-s%d.trace", f.IDString()[:16], party, streams))
	return t
}

// load gives the link the file's trace when it exists and matches; otherwise it notes why
// the first inference is dealt on demand. Only a directory that cannot be read is an error.
func (t *traceFile) load(link *dealer.Link) error {
	b, err := os.ReadFile(t.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		t.note = fmt.Sprintf("no trace %s yet: the first inference is dealt on demand, and its requests written there for the next session", t.path)
		return nil
	case err != nil:
		return fmt.Errorf("--helper-traces: %w", err)
	}
	var tr dealer.Trace
	if err := tr.UnmarshalBinary(b); err != nil {
		t.note = fmt.Sprintf("trace %s not used (%v): the first inference is dealt on demand, and the file rewritten", t.path, err)
		return nil
	}
	if tr.Key != t.key || tr.Party != link.Party() {
		t.note = fmt.Sprintf("trace %s was recorded by another binary or for other options: the first inference is dealt on demand, and the file rewritten", t.path)
		return nil
	}
	if err := link.SetFirstTrace(&tr); err != nil {
		return fmt.Errorf("--helper-traces %s: %w", t.path, err)
	}
	t.loaded = true
	return nil
}

// save writes the session's first-inference trace unless a matching one was loaded (atomically:
// a temporary file renamed over the name).
func (t *traceFile) save(link *dealer.Link) error {
	if t.loaded {
		return nil
	}
	tr, err := link.FirstTrace(t.key)
	if err != nil {
		return fmt.Errorf("--helper-traces: nothing written to %s: %w", t.path, err)
	}
	b, err := tr.MarshalBinary()
	if err != nil {
		return fmt.Errorf("--helper-traces: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(t.path), 0o755); err != nil {
		return fmt.Errorf("--helper-traces: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(t.path), ".trace-*")
	if err != nil {
		return fmt.Errorf("--helper-traces: %w", err)
	}
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), t.path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("--helper-traces: writing %s: %w", t.path, err)
	}
	return nil
}
