package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestOTSubcommandSmoke(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"ot", "-pipe", "-min", "6", "-max", "7", "-reps", "1",
		"-kinds", "cot:8,cotw:3:20,ot:1,rot:64,otn:4:2"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"COT_8", "COT_20x3", "OT_1", "ROT_64", "(4 1)-OT_2", "2^7", "bytes/OT"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, out.String())
		}
	}
	// Batches of 2^7 are multiples of 64: no padding, so the bits/OT column
	// is the bound plus per-batch constants only; check one row exactly.
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "COT_8 ") && strings.Contains(line, "2^7") {
			// 16 (u) + 1 (8-bit correction) bytes per OT, plus header 28 + ack 12 + 2 frame headers.
			if !strings.Contains(line, "17.38") {
				t.Fatalf("COT_8 at 2^7: unexpected bytes/OT in %q", line)
			}
		}
	}
}

func TestUsageErrors(t *testing.T) {
	var out, errOut bytes.Buffer
	ctx := context.Background()
	if code := run(ctx, nil, &out, &errOut); code != 2 {
		t.Fatalf("no arguments: exit %d", code)
	}
	if code := run(ctx, []string{"nosuch"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "unknown subcommand") {
		t.Fatalf("unknown subcommand: exit %d, %q", code, errOut.String())
	}
	for _, bad := range [][]string{
		{"ot", "-kinds", "cot:65"},
		{"ot", "-kinds", "otn:3:1"},
		{"ot", "-kinds", "foo:1"},
		{"ot", "-kinds", "cotw:4"},
		{"ot", "-net", "moon"},
		{"ot", "-min", "9", "-max", "8"},
	} {
		errOut.Reset()
		if code := run(ctx, bad, &out, &errOut); code != 1 {
			t.Fatalf("%v: exit %d, want 1 (%s)", bad, code, errOut.String())
		}
	}
	if code := run(ctx, []string{"ot", "-nosuchflag"}, &out, &errOut); code != 2 {
		t.Fatalf("bad flag: exit %d", code)
	}
}
