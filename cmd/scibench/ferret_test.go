package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestOTSubcommandFerret(t *testing.T) {
	if testing.Short() {
		t.Skip("Ferret's Small set needs ~20 MB per direction and a second of setup")
	}
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"ot", "-pipe", "-ot", "iknp,ferret", "-ferret", "small", "-iters", "1",
		"-min", "10", "-max", "10", "-reps", "1", "-kinds", "bcot,cot:32,otn:8:2"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"setup ferret-small", "2.8505 bits/COT", "block COT", "0.966M", "ferret-small", "iknp",
		"amortised ferret-small block COT: 966336 instances, 1 main iterations: 2.8505 bits/instance", "(8 1)-OT_2"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestNonlinearSubcommandFerret(t *testing.T) {
	if testing.Short() {
		t.Skip("Ferret's Small set needs ~20 MB per direction and a second of setup")
	}
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"nonlinear", "-pipe", "-ot", "ferret,iknp,ferret-cf2", "-ferret", "small",
		"-protocols", "relu,maxpool", "-min", "8", "-max", "8", "-maxpool", "6", "-streams", "1"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"plan ferret-small, m=3, ROT triples", "plan ferret-small, m=4, OT-N triples",
		"plan iknp, m=4, OT-N triples", "amortised", "A B A B"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, out.String())
		}
	}
	for _, bad := range [][]string{{"nonlinear", "-ot", "nosuch"}, {"nonlinear", "-triples", "x"}, {"nonlinear", "-ferret", "huge"},
		{"ot", "-ot", "nosuch"}, {"ot", "-ferret", "huge"}, {"ot", "-iters", "0"}} {
		errOut.Reset()
		if code := run(context.Background(), bad, &out, &errOut); code != 1 {
			t.Fatalf("%v: exit %d, want 1 (%s)", bad, code, errOut.String())
		}
	}
}
