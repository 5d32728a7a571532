package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cryptflow-go/cryptflow/internal/atomicfile"
	"github.com/cryptflow-go/cryptflow/internal/cli"
	"github.com/cryptflow-go/cryptflow/internal/serve"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/sciir"
	"github.com/cryptflow-go/cryptflow/vm"
	"github.com/cryptflow-go/cryptflow/vm/sci"
)

// The two-party offline phase (--ot ferret): --offline-mib bounds it, --offline-plans keeps the
// first inference's plan between sessions (see vm/sci offline.go).

// offlineFlags are the offline phase's flags.
type offlineFlags struct {
	mib   int
	plans string
	heMiB int
	dealt bool
}

func (o *offlineFlags) define(fs *flag.FlagSet) {
	fs.IntVar(&o.mib, "offline-mib", sci.DefaultOfflineMiB, "--ot ferret (server, client, --local): before each inference's input is used, run ahead the Ferret iterations it will take (their flights and base COTs), holding at most `MIB` MiB of them (both parties: the smaller bound applies; what exceeds it runs online, and the report says so), and the server builds its HE weights at the first inference's start; 0: off (both made when used)")
	fs.IntVar(&o.heMiB, "offline-he-mib", sci.DefaultOfflineHEMiB, "modes scihe and auto (server, client, --local; with --offline-mib > 0): before each inference's input is used, run every HE linear layer's HE protocol on a random mask of the client's, holding at most `MIB` MiB of the layers' shares (both parties: the smaller bound applies), so that online such a layer sends l bits per input element and the server computes it in the clear ring; the layers beyond the bound run their HE protocol online; 0: off")
	fs.StringVar(&o.plans, "offline-plans", "", "--ot ferret (server, client, --local): keep each program's first-inference plan (the Ferret iterations it takes) in `DIR`, so that a later session runs the first inference's iterations ahead too (without one, only the later inferences of a batch are planned); a session without a matching file writes it")
}

func (o *offlineFlags) defineDealt(fs *flag.FlagSet) {
	fs.BoolVar(&o.dealt, "offline-dealt", false, "two-party (server, client, --local; both parties alike): make the nonlinear layers' correlations (random 1-of-N OTs and bit triples, as sci3's helper deals them) with the session's own OT before each inference's input is used, from the previous inference's counts (or, with --offline-plans, an earlier session's first), within --offline-mib; what is missing is made on demand during the inference")
}

func (o *offlineFlags) check() error {
	if o.mib < 0 || o.mib > 1<<20 {
		return cli.Usagef("--offline-mib %d: want 0 (off) to %d", o.mib, 1<<20)
	}
	if o.heMiB < 0 || o.heMiB > 1<<20 {
		return cli.Usagef("--offline-he-mib %d: want 0 (off) to %d", o.heMiB, 1<<20)
	}
	return nil
}

// options returns the backend's offline options, the first inference's plan loaded from
// --offline-plans when it has a matching file.
func (o *offlineFlags) options(pf *planFile) sci.Offline {
	off := sci.Offline{MiB: o.mib, HEMiB: o.heMiB, Dealt: o.dealt}
	if o.mib == 0 {
		off.MiB = -1
	}
	if o.heMiB == 0 {
		off.HEMiB = -1
	}
	if pf != nil {
		off.First = pf.plan
	}
	return off
}

// planKeyVersion changes when the iterations a program takes could change for another reason
// than the program, the party, the stream count, the Ferret parameters or the binary.
const planKeyVersion = "cryptflow sci ferret first-inference plan 1"

// planFile is a party's file of its first inference's plan (--offline-plans DIR).
type planFile struct {
	path   string
	key    string
	plan   *sci.Plan // loaded and matching, or nil
	note   string    // what happened to the file, for stderr
	stored struct {
		Key  string    `json:"key"`
		Plan *sci.Plan `json:"plan"`
	}
}

// newPlanFile names the plan of program f for this party, stream count and Ferret parameters
// in dir and loads it if it matches (the key has this binary's build, as --helper-traces').
func newPlanFile(dir string, f *sciir.File, party, streams int, ferretName string) (*planFile, error) {
	k := sessionKey(planKeyVersion+" "+ferretName, f, party, streams)
	p := &planFile{key: fmt.Sprintf("%x", k), path: filepath.Join(dir, fmt.Sprintf("%s-p%d-s%d.plan.json", f.IDString()[:16], party, streams))}
	b, err := os.ReadFile(p.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		p.note = fmt.Sprintf("no plan %s yet: the first inference's Ferret iterations run online, and its plan is written there for the next session", p.path)
		return p, nil
	case err != nil:
		return nil, fmt.Errorf("--offline-plans: %w", err)
	}
	if err := json.Unmarshal(b, &p.stored); err != nil || p.stored.Plan == nil {
		p.note = fmt.Sprintf("plan %s not used (unreadable): the first inference runs online, and the file is rewritten", p.path)
		return p, nil
	}
	if p.stored.Key != p.key || len(p.stored.Plan.Iterations) != streams {
		p.note = fmt.Sprintf("plan %s was recorded by another binary or for other options: the first inference runs online, and the file is rewritten", p.path)
		return p, nil
	}
	p.plan = p.stored.Plan
	return p, nil
}

// save writes the session's first-inference plan unless a matching one was loaded.
func (p *planFile) save(plan *sci.Plan) error {
	if p.plan != nil || plan == nil {
		return nil
	}
	p.stored.Key, p.stored.Plan = p.key, plan
	b, err := json.Marshal(&p.stored)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p.path), 0o755); err != nil {
		return fmt.Errorf("--offline-plans: %w", err)
	}
	if err := atomicfile.WriteFile(p.path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("--offline-plans: writing %s: %w", p.path, err)
	}
	return nil
}

// sciBackend starts the SCI backend with options o; with Ferret, the offline phase as the
// flags say.
func sciBackend(o sci.Options, c *config, f *sciir.File, stderr io.Writer) serve.BackendFunc {
	return func(ctx context.Context, conn *transport.Conn, streams []*transport.Conn, party int, r ring.Ring) (vm.Backend, error) {
		o := o
		o.Streams = streams
		var pf *planFile
		if o.OT == sci.OTFerret && c != nil && c.offline.plans != "" {
			var err error
			name := o.Ferret.Name
			if c.offline.dealt {
				name += " dealt" // the plan then holds the nonlinear correlations' counts too
			}
			if pf, err = newPlanFile(c.offline.plans, f, party, len(streams)+1, name); err != nil {
				return nil, err
			}
			if pf.note != "" && !c.quiet {
				fmt.Fprintf(stderr, "scirun: party %d: %s\n", party, pf.note)
			}
		}
		if c != nil {
			o.Offline = c.offline.options(pf)
			if c.offline.mib > 0 {
				// Party 0's with its weights (the HE weights built ahead), party 1's the client
				// copy (the HE linear layers made ahead).
				o.Offline.Program = f.Program
			}
		}
		b, err := sci.New(ctx, conn, party, r, o)
		if err != nil {
			return nil, err
		}
		return &sciParty{Backend: b, plan: pf, out: stderr, ferret: o.OT == sci.OTFerret}, nil
	}
}

// sciParty is the SCI backend with its offline phase in the report (serve.OfflineAccounter)
// and its first-inference plan saved at the end (--offline-plans).
type sciParty struct {
	*sci.Backend
	plan   *planFile
	out    io.Writer
	ferret bool // the OT source is Ferret
}

// OfflineAccount is the offline phase for the report.
func (b *sciParty) OfflineAccount() *serve.OfflineAccount {
	a := b.Offline()
	if a == nil {
		return nil
	}
	src := "he"
	if b.ferret {
		src = "ferret"
	} else if a.Dealt != nil {
		src = "dealt"
	}
	var d serve.DealtAccount
	if a.Dealt != nil {
		d = serve.DealtAccount{AheadOTs: a.Dealt.AheadOTs, AheadTriples: a.Dealt.AheadTriples, OnDemandOTs: a.Dealt.OnDemandOTs,
			OnDemandTriples: a.Dealt.OnDemandTriples, FirstOnDemand: a.Dealt.FirstOnDemand, MadeBytes: a.Dealt.MadeBytes,
			CappedBytes: a.Dealt.CappedBytes, PeakBytes: a.Dealt.PeakBytes, FirstPlanned: a.Dealt.FirstPlanned}
	}
	return &serve.OfflineAccount{Dealt: d, Time: a.Offline.Time, Stats: a.Offline.Stats, Source: src, Ahead: a.Ahead,
		Taken: a.Taken, Online: a.Online, Capped: a.Capped, Unused: a.Queued, CapBytes: a.CapBytes, PeakBytes: a.PeakBytes, PrebuiltBytes: a.PrebuiltBytes,
		FirstPlanned: a.FirstPlanned, FirstOnline: a.FirstOnline, FirstCOTs: a.FirstCOTs, HELayers: a.HELayers,
		HEUncached: a.HEUncached, HEBytes: a.HEBytes, HEBound: a.HEBound, HEAhead: a.HEAhead, HECapped: a.HECapped,
		HEAheadCap: a.HEAheadCap, HEAheadBytes: a.HEAheadBytes}
}

// Close saves the first inference's plan (--offline-plans) when the file had none.
func (b *sciParty) Close() error {
	if b.plan != nil {
		if err := b.plan.save(b.Plan()); err != nil {
			fmt.Fprintf(b.out, "scirun: party %d: %v\n", b.Party(), err)
		}
	}
	return nil
}
