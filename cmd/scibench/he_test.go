package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/protocols/he/heplan"
)

func TestHESubcommandSmoke(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"he", "-pipe", "-l", "16", "-layers", "fc", "-reps", "1", "-ctpt", "10"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	want, err := heplan.MatMulBytes(1001, 512, 1, 16)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"N = 4096", "ct×pt", "one more input ciphertext", "FC 1001×512", "0.74 s; 0.52 MB + 38 MB keys"} {
		if !strings.Contains(out.String(), s) {
			t.Fatalf("output lacks %q:\n%s", s, out.String())
		}
	}
	// The FC rows report the measured bytes (which the command requires to equal the formula)
	// next to the formula.
	mbs := fmt.Sprintf("%.3f", float64(want)/1e6)
	rows := 0
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "FC ") || strings.Contains(line, " again/1 ") {
			rows++
			if strings.Count(line, mbs) != 2 {
				t.Fatalf("row %q: want measured and formula %s MB", line, mbs)
			}
		}
	}
	if rows != 2 {
		t.Fatalf("%d FC rows, want 2:\n%s", rows, out.String())
	}
	errOut.Reset()
	for _, bad := range [][]string{{"he", "-l", "0"}, {"he", "-layers", "pool"}, {"he", "-reps", "0"}} {
		if code := run(context.Background(), bad, &out, &errOut); code != 1 {
			t.Fatalf("%v: exit %d, want 1 (%s)", bad, code, errOut.String())
		}
	}
}
