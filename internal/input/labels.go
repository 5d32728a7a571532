package input

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/cryptflow-go/cryptflow/internal/readfile"
)

// ReadLabels reads a labels.txt of `FILE LABEL` lines (blank lines and #-comments allowed; labels
// are non-negative integers, one per file) — the format of athosc --validate folders and scirun
// batch folders. A missing file gives nil labels and no error.
func ReadLabels(path string) (map[string]int, error) { return ReadLabelsNamed(path, nil) }

// ReadLabelsNamed is ReadLabels where a label may also be a class name (the rest of the line
// after FILE, so names may hold spaces), resolved to its index in classes.
func ReadLabelsNamed(path string, classes []string) (map[string]int, error) {
	index := make(map[string]int, len(classes))
	for k, name := range classes {
		index[name] = k
	}
	f, err := readfile.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("labels: %w", err)
	}
	defer f.Close()
	labels := map[string]int{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		i := strings.IndexAny(text, " \t")
		if i < 0 {
			return nil, fmt.Errorf("%s:%d: want `file label`, got %q", path, line, text)
		}
		file, label := text[:i], strings.TrimSpace(text[i+1:])
		if label == "" {
			return nil, fmt.Errorf("%s:%d: want `file label`, got %q", path, line, text)
		}
		fields := []string{file, label}
		l, err := strconv.Atoi(label)
		switch {
		case err == nil && l < 0:
			return nil, fmt.Errorf("%s:%d: label %d is negative: labels are zero-based class indices or class names", path, line, l)
		case err != nil && len(classes) == 0:
			return nil, fmt.Errorf("%s:%d: label %q is not a class index, and no class names are known to resolve it (athosc --classes FILE, or a classes.txt beside labels.txt)", path, line, label)
		case err != nil:
			k, known := index[label]
			if !known {
				return nil, fmt.Errorf("%s:%d: label %q is neither a class index nor one of the %d class names (%s)", path, line, label, len(classes), preview(classes))
			}
			l = k
		}
		if _, dup := labels[fields[0]]; dup {
			return nil, fmt.Errorf("%s:%d: second label for %s", path, line, fields[0])
		}
		labels[fields[0]] = l
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("labels: %w", err)
	}
	return labels, nil
}

// preview lists the first few names.
func preview(names []string) string {
	if len(names) > 5 {
		return strings.Join(names[:5], ", ") + ", …"
	}
	return strings.Join(names, ", ")
}

// ReadClasses reads a class-name list (athosc --classes, the classes.txt mkdata writes): one name
// per line in index order, line k (from 0) naming class k; surrounding blanks are trimmed and
// trailing blank lines ignored. An empty name inside the list or a name given twice is an error.
func ReadClasses(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("class names: %w", err)
	}
	lines := strings.Split(strings.TrimRight(strings.ReplaceAll(string(b), "\r\n", "\n"), " \t\n"), "\n")
	seen := map[string]int{}
	var names []string
	for k, l := range lines {
		name := strings.TrimSpace(l)
		if name == "" {
			return nil, fmt.Errorf("%s:%d: an empty class name: line k (from 0) names class k, so every line needs one", path, k+1)
		}
		if j, dup := seen[name]; dup {
			return nil, fmt.Errorf("%s:%d: class name %q again (first for class %d): names must be distinct", path, k+1, name, j)
		}
		seen[name] = k
		names = append(names, name)
	}
	if len(names) == 0 || names[0] == "" {
		return nil, fmt.Errorf("%s holds no class names", path)
	}
	return names, nil
}
