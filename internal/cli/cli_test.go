package cli

import (
	"errors"
	"flag"
	"reflect"
	"testing"
)

func TestParseInterspersed(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	out := fs.String("o", "", "")
	batch := fs.Int("batch", 1, "")
	pos, err := Parse(fs, []string{"model.onnx", "-o", "m.sciir", "extra", "--batch", "4", "--", "-literal"})
	if err != nil {
		t.Fatal(err)
	}
	if *out != "m.sciir" || *batch != 4 || !reflect.DeepEqual(pos, []string{"model.onnx", "extra", "-literal"}) {
		t.Fatalf("got o=%q batch=%d pos=%v", *out, *batch, pos)
	}
	if _, err := Parse(fs, []string{"--nope"}); !errors.Is(err, ErrUsage) {
		t.Fatalf("unknown flag: got %v", err)
	}
}

func TestDispatch(t *testing.T) {
	var got string
	cmds := []Command{{Name: "a", Run: func(args []string) error { got = "a"; return nil }}}
	if err := Dispatch("p", "intro", cmds, func(args []string) error { got = "fb:" + args[0]; return nil }, []string{"m.onnx"}); err != nil || got != "fb:m.onnx" {
		t.Fatalf("fallback: %v %q", err, got)
	}
	if err := Dispatch("p", "intro", cmds, nil, []string{"a"}); err != nil || got != "a" {
		t.Fatalf("command: %v %q", err, got)
	}
	if err := Dispatch("p", "intro", cmds, nil, []string{"zz"}); !errors.Is(err, ErrUsage) {
		t.Fatalf("unknown: %v", err)
	}
}
