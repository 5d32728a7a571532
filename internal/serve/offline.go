package serve

import (
	"fmt"
	"strings"
	"time"

	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

// OfflineAccount is what a two-party backend with an offline phase (sci on Ferret) knows of it:
// what it made at the inferences' starts, before their inputs were used, and what was left on
// their critical path.
type OfflineAccount struct {
	// Time and Stats are the offline phase's wall time and this party's traffic, summed over
	// the inferences' starts.
	Time  time.Duration
	Stats transport.Stats
	// Source names what was made ahead ("ferret": Ferret main iterations).
	Source string
	// Ahead, Taken, Online, Capped and Unused count the source's units (Ferret iterations, both
	// directions, every stream): made ahead, used by the inferences, made on an inference's
	// critical path, left to the critical path by the memory bound, made ahead and never used.
	Ahead, Taken, Online, Capped, Unused int
	// CapBytes is the memory bound, PeakBytes the most held ahead, PrebuiltBytes the most of it
	// in outputs built ahead.
	CapBytes, PeakBytes, PrebuiltBytes int64
	// FirstPlanned says that the first inference ran on a plan from an earlier session,
	// FirstOnline how many units it still made on its critical path.
	FirstPlanned bool
	FirstOnline  int
	// FirstCOTs are the COTs the first inference drew in the direction in which party p sends.
	FirstCOTs [2]uint64
	// HELayers are the HE linear layers whose weight plaintexts the server built offline,
	// HEUncached those beyond the cache's bound HEBound (HEBytes used).
	HELayers, HEUncached int
	HEBytes, HEBound     int64
	// HEAhead are the HE linear layers made ahead (their HE protocol run on a random mask before
	// the input, every inference), HECapped those the bound HEAheadCap left online, and
	// HEAheadBytes the most their shares held.
	HEAhead, HECapped        int
	HEAheadCap, HEAheadBytes int64
	// Dealt is the nonlinear layers' correlations made offline (scirun --offline-dealt).
	Dealt DealtAccount
}

// DealtAccount counts the nonlinear layers' correlations made by the two parties themselves
// (vm/sci selfdeal.go): OTs and triples made ahead, made on demand during the inferences (of
// which FirstOnDemand in the first), the memory made ahead (both parties' ends), what the bound
// left out, the most this party held, and whether the first inference had a plan.
type DealtAccount struct {
	AheadOTs        uint64 `json:"ahead_ots"`
	AheadTriples    uint64 `json:"ahead_triples"`
	OnDemandOTs     uint64 `json:"on_demand_ots"`
	OnDemandTriples uint64 `json:"on_demand_triples"`
	FirstOnDemand   uint64 `json:"first_on_demand"`
	MadeBytes       int64  `json:"made_bytes"`
	CappedBytes     int64  `json:"capped_bytes"`
	PeakBytes       int64  `json:"peak_bytes"`
	FirstPlanned    bool   `json:"first_planned"`
}

// OfflineAccounter is a two-party backend with an offline phase (Report.Offline).
type OfflineAccounter interface {
	// OfflineAccount returns the session's offline phase so far, or nil if it has none.
	OfflineAccount() *OfflineAccount
}

// Offline is Report.Offline: a two-party session split, as the three-party one (ThreeParty),
// into the offline phase (what was made at the inferences' starts, before their inputs were
// used: OfflineMS, OfflineBytes) and the online one (OnlineMS = RunMS − OfflineMS, from input
// to output; OnlineBytes the run's other bytes). Bytes count both ways, at this party.
type Offline struct {
	OfflineMS    float64 `json:"offline_ms"`
	OnlineMS     float64 `json:"online_ms"`
	OfflineBytes int64   `json:"offline_bytes"`
	OnlineBytes  int64   `json:"online_bytes"`
	// OfflineTraffic is the offline phase's traffic by direction, with this party's flights.
	OfflineTraffic Traffic `json:"offline_traffic"`
	// Source is what the offline phase makes ("ferret": Ferret main iterations, counted in the
	// *_iterations fields, both directions and every stream).
	Source           string `json:"source"`
	AheadIterations  int    `json:"ahead_iterations"`  // run ahead
	TakenIterations  int    `json:"taken_iterations"`  // of those, used by the inferences
	OnlineIterations int    `json:"online_iterations"` // run on an inference's critical path
	CappedIterations int    `json:"capped_iterations,omitempty"`
	UnusedIterations int    `json:"unused_iterations,omitempty"`
	CapBytes         int64  `json:"cap_bytes"`
	PeakBytes        int64  `json:"peak_bytes"`
	// PrebuiltBytes is the most memory the Ferret outputs built ahead held (what the bound left
	// after the iterations run ahead: their expansion and LPN step, off the critical path).
	PrebuiltBytes int64 `json:"prebuilt_bytes"`
	// FirstPlanned says the first inference ran on a plan of an earlier session (scirun
	// --offline-plans); FirstOnlineIterations the iterations it still ran online.
	FirstPlanned          bool `json:"first_planned"`
	FirstOnlineIterations int  `json:"first_online_iterations"`
	// FirstCOTs are the correlated OTs the first inference drew (the reservoirs' drops
	// included), every stream: [0] those party 0 sends, [1] those party 1 sends.
	FirstCOTs [2]uint64 `json:"first_cots"`
	// HEWeightLayers are the HE linear layers whose weight plaintexts (NTT form) the server
	// built offline, HEWeightUncached those left to build online (beyond the cache's bound
	// HEWeightBound bytes; HEWeightBytes used).
	HEWeightLayers   int   `json:"he_weight_layers,omitempty"`
	HEWeightUncached int   `json:"he_weight_uncached,omitempty"`
	HEWeightBytes    int64 `json:"he_weight_bytes,omitempty"`
	HEWeightBound    int64 `json:"he_weight_bound,omitempty"`
	// HELayersAhead are the HE linear layers whose HE protocol ran offline on a random mask
	// (every inference counted; online they send l bits per input element), HELayersCapped
	// those the bound HELayersCap left to run their HE protocol online, HELayersBytes the most
	// their shares held.
	HELayersAhead  int   `json:"he_layers_ahead,omitempty"`
	HELayersCapped int   `json:"he_layers_capped,omitempty"`
	HELayersCap    int64 `json:"he_layers_cap,omitempty"`
	HELayersBytes  int64 `json:"he_layers_bytes,omitempty"`
	// Dealt is the nonlinear layers' correlations made offline (scirun --offline-dealt), or nil.
	Dealt *DealtAccount `json:"dealt,omitempty"`
}

// offlineOf fills Report.Offline from the backend's account.
func offlineOf(a *OfflineAccount, rep *Report) *Offline {
	if a == nil {
		return nil
	}
	run := rep.Total.BytesSent + rep.Total.BytesRecv - rep.Handshake.BytesSent - rep.Handshake.BytesRecv -
		rep.Setup.BytesSent - rep.Setup.BytesRecv
	off := a.Stats.BytesSent + a.Stats.BytesRecv
	o := &Offline{OfflineMS: ms(a.Time), OfflineBytes: off, OnlineBytes: run - off, OfflineTraffic: trafficOf(a.Stats), Source: a.Source,
		AheadIterations: a.Ahead, TakenIterations: a.Taken, OnlineIterations: a.Online, CappedIterations: a.Capped,
		UnusedIterations: a.Unused, CapBytes: a.CapBytes, PeakBytes: a.PeakBytes, PrebuiltBytes: a.PrebuiltBytes, FirstPlanned: a.FirstPlanned,
		FirstOnlineIterations: a.FirstOnline, FirstCOTs: a.FirstCOTs, HEWeightLayers: a.HELayers, HEWeightUncached: a.HEUncached,
		HEWeightBytes: a.HEBytes, HEWeightBound: a.HEBound, HELayersAhead: a.HEAhead, HELayersCapped: a.HECapped,
		HELayersCap: a.HEAheadCap, HELayersBytes: a.HEAheadBytes}
	if a.Dealt != (DealtAccount{}) {
		d := a.Dealt
		o.Dealt = &d
	}
	o.OnlineMS = max(0, rep.RunMS-o.OfflineMS)
	return o
}

// write writes the offline/online lines under the per-layer table.
func (o *Offline) write(b *strings.Builder, runMS float64) {
	fmt.Fprintf(b, "offline (before the inputs are used) %s, %s; online %s, %s (of the run's %s)\n",
		fmtMS(o.OfflineMS), FormatBytes(o.OfflineBytes), fmtMS(o.OnlineMS), FormatBytes(o.OnlineBytes), fmtMS(runMS))
	first := "the first inference had no plan (scirun --offline-plans keeps one for the next session)"
	if o.FirstPlanned {
		first = fmt.Sprintf("the first inference planned, %d of its iterations online", o.FirstOnlineIterations)
	}
	if o.Source == "ferret" {
		fmt.Fprintf(b, "  %s iterations: %d run ahead (%d used, %d unused), %d online; %s (it drew %d and %d COTs sent by party 0 and 1); outputs built ahead: up to %s\n",
			o.Source, o.AheadIterations, o.TakenIterations, o.UnusedIterations, o.OnlineIterations, first, o.FirstCOTs[0], o.FirstCOTs[1], FormatBytes(o.PrebuiltBytes))
	}
	if o.HEWeightLayers+o.HEWeightUncached > 0 {
		fmt.Fprintf(b, "  HE weights (NTT form) of %d layers built offline (%s of the cache's %s); %d layers beyond the bound build theirs online\n",
			o.HEWeightLayers, FormatBytes(o.HEWeightBytes), FormatBytes(o.HEWeightBound), o.HEWeightUncached)
	}
	if o.HELayersAhead+o.HELayersCapped > 0 {
		fmt.Fprintf(b, "  HE linear layers made ahead (their HE protocol on a random mask): %d, holding up to %s of shares (bound %s); %d beyond the bound ran their HE protocol online\n",
			o.HELayersAhead, FormatBytes(o.HELayersBytes), FormatBytes(o.HELayersCap), o.HELayersCapped)
	}
	if d := o.Dealt; d != nil {
		first := "the first inference had no plan (made on demand)"
		if d.FirstPlanned {
			first = "the first inference planned"
		}
		fmt.Fprintf(b, "  nonlinear correlations made offline: %d OTs and %d triples ahead (%s, both parties; peak %s here); %d OTs and %d triples on demand (%d in the first inference: %s); %s left on demand by the bound\n",
			d.AheadOTs, d.AheadTriples, FormatBytes(d.MadeBytes), FormatBytes(d.PeakBytes), d.OnDemandOTs, d.OnDemandTriples, d.FirstOnDemand, first, FormatBytes(d.CappedBytes))
	}
	if o.CappedIterations > 0 {
		fmt.Fprintf(b, "  %d planned iterations ran online: they exceed the offline memory bound of %s (peak %s held ahead)\n",
			o.CappedIterations, FormatBytes(o.CapBytes), FormatBytes(o.PeakBytes))
	}
}
