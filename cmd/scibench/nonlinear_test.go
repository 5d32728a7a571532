package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestNonlinearSubcommandSmoke(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"nonlinear", "-pipe", "-min", "7", "-max", "7", "-maxpool", "6",
		"-l", "16", "-s", "5", "-streams", "2"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"ReLU", "millionaires'", "Trunc s=5", "Trunc s=5, x≥0", "B2A", "MUX",
		"MaxPool d=9", "ArgMax d=9", "AvgPool d=49", "2^7", "2^6", "bytes/unit", "flights"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestNonlinearUsageErrors(t *testing.T) {
	var out, errOut bytes.Buffer
	ctx := context.Background()
	for _, bad := range [][]string{
		{"nonlinear", "-protocols", "nosuch"},
		{"nonlinear", "-l", "65"},
		{"nonlinear", "-s", "40"},
		{"nonlinear", "-pool", "1"},
		{"nonlinear", "-m", "9", "-pipe", "-min", "1", "-max", "1"},
		{"nonlinear", "-streams", "0"},
		{"nonlinear", "-net", "moon"},
	} {
		errOut.Reset()
		if code := run(ctx, bad, &out, &errOut); code != 1 {
			t.Fatalf("%v: exit %d, want 1 (%s)", bad, code, errOut.String())
		}
	}
	if code := run(ctx, []string{"nonlinear", "-nosuchflag"}, &out, &errOut); code != 2 {
		t.Fatalf("bad flag: exit %d", code)
	}
}
