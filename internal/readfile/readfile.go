// Package readfile opens the files the commands read as input (models and their external data,
// inputs, labels) so that only a regular file is ever read. A named pipe given by mistake, or
// planted in a batch folder, would otherwise block the open (and the run) until some writer
// appeared, past every signal; a device or socket could feed the run without end. Files are
// opened without blocking (O_NONBLOCK where the system has it) and refused, naming the path,
// unless they are regular; reads through Reader honour a context.
package readfile

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// NotRegularError is returned for a path that names something other than a regular file.
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	kind := "not a regular file"
	switch m := e.Mode; {
	case m&fs.ModeNamedPipe != 0:
		kind = "a named pipe (FIFO), not a regular file"
	case m&fs.ModeDevice != 0, m&fs.ModeCharDevice != 0:
		kind = "a device, not a regular file"
	case m&fs.ModeSocket != 0:
		kind = "a socket, not a regular file"
	case m.IsDir():
		kind = "a folder, not a regular file"
	}
	return fmt.Sprintf("%s is %s: give a file", e.Path, kind)
}

// Open opens path for reading without blocking and returns it if it is a regular file. Anything
// else is closed again and refused with a *NotRegularError.
func Open(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|nonblock, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, &NotRegularError{Path: path, Mode: st.Mode()}
	}
	return f, nil
}

// ReadFile reads the regular file at path whole, stopping with ctx's error when ctx is done.
func ReadFile(ctx context.Context, path string) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var size int
	if st, err := f.Stat(); err == nil && st.Size() > 0 && st.Size() < 1<<40 {
		size = int(st.Size())
	}
	b := make([]byte, 0, size+1)
	r := Reader(ctx, f)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// Reader returns r whose reads fail with ctx's error once ctx is done (each read of a regular
// file returns promptly, so a cancelled run stops within one read).
func Reader(ctx context.Context, r io.Reader) io.Reader {
	if ctx.Done() == nil {
		return r
	}
	return ctxReader{ctx, r}
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

// chunk bounds one read, so that cancellation is seen between chunks of a large file.
const chunk = 4 << 20

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	if len(p) > chunk {
		p = p[:chunk]
	}
	return c.r.Read(p)
}
